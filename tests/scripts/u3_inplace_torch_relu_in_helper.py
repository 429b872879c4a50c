"""In place, in a helper that has returned: `torch.relu_(t)` overwrites the output that tanh saved."""
import torch
from torch import nn

torch.manual_seed(0)
enc, dec = nn.Linear(5, 6), nn.Linear(6, 2)


def squash(z):
    t = torch.tanh(z)
    torch.relu_(t)  # write: t
    return t


opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
data, target = torch.randn(8, 5), torch.randn(8, 2)
steps = 0
for epoch in range(3):
    out = dec(squash(enc(data)))
    loss = nn.functional.mse_loss(out, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
# page: mental_model
