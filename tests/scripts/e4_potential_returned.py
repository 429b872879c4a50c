"""A leaky integrator keeps its potential on the module and returns it as its output; the
training loop runs several time steps per batch and never resets the potential between
batches. Storing the potential detached would leave this call's own output without a graph."""
import torch
from torch import nn


class Integrator(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.inp = nn.Linear(size, size)
        self.potential = torch.zeros(size)

    def forward(self, x):
        self.potential = 0.8 * self.potential + self.inp(x)  # enters: self.potential
        return self.potential


torch.manual_seed(0)
cell = Integrator(4)
opt = torch.optim.SGD(cell.parameters(), lr=0.05)
for batch in range(3):
    x, target = torch.randn(2, 4), torch.randn(2, 4)
    loss = sum(((cell(x) - target) ** 2).mean() for _ in range(3))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained")
