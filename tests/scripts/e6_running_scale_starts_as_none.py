"""A running scale per loss name, kept in a defaultdict that gives None for a new name, updated
with each loss's graph and read back at the next call."""
from collections import defaultdict

import torch
from torch import nn


class Scaler:
    def __init__(self, beta=0.8):
        self.beta = beta
        self.scale = defaultdict(lambda: None)

    def __call__(self, name, loss):
        before = self.scale[name]
        self.scale[name] = loss if before is None else self.beta * before + (1 - self.beta) * loss
        return loss / self.scale[name]


torch.manual_seed(0)
net = nn.Linear(3, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
scaler = Scaler()
for step in range(3):
    x = torch.randn(6, 3)
    out = net(x)
    loss = scaler("a", out[:, 0].pow(2).mean()) + scaler("b", (out[:, 1] - 1).abs().mean())
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
