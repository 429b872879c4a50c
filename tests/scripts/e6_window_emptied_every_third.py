"""A window of earlier steps' outputs kept on purpose and emptied by the program itself every
third step; the outputs go in with their graphs, so the second step fails."""
import torch
from torch import nn

torch.manual_seed(0)
enc = nn.Linear(4, 4)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
window = []
for step in range(6):
    z = enc(torch.randn(2, 4))
    window.append(z)
    pool = torch.cat(window)
    loss = (z @ pool.t()).logsumexp(dim=1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 3 == 2:
        window.clear()
print("TRAINED")
