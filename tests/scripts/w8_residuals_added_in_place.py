"""A residual block that adds two feed-forward branches into its hidden state with +=, one after
the other; each branch's first Linear saved the hidden state that the next += changes.
Its fix: both additions out of place (the second alone still leaves the first's write)."""
import torch
from torch import nn

torch.manual_seed(0)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 6)
        self.ff1 = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
        self.ff2 = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        h = self.inp(x)
        h += self.ff1(h)
        h += 0.5 * self.ff2(h)  # write: h
        return self.out(h)


model = Residual()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(7, 3), torch.randn(7, 2)
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
