"""A layer caches a table made from a learned parameter by a method of its own, filled on the
first call only; every later call reuses the table, whose graph the first backward freed."""
import torch
from torch import nn


class Table(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(size))
        self.table = None

    def fill(self):
        self.table = self.log_scale.exp().cumsum(0)

    def forward(self, x):
        if self.table is None:
            self.fill()
        return x * self.table


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 4), Table(4))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    loss = net(torch.randn(5, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
