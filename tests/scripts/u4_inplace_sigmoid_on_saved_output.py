"""A gate computed once and used twice: the decoder reads it, then it is squashed in place with
sigmoid_() for a sparsity term, although exp's node and the decoder's matmul saved it."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.out = nn.Linear(5, 7), nn.Linear(7, 5)

    def forward(self, x):
        gate = torch.exp(-self.inp(x).pow(2))
        recon = self.out(gate)
        squashed = gate.sigmoid_()  # write: gate
        return recon, squashed


model = Gated()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
data = torch.randn(12, 5)
for step in range(3):
    recon, squashed = model(data)
    loss = F.mse_loss(recon, data) + 1e-2 * squashed.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
