"""A model turns a raw parameter into a positive scale once, in __init__, and its loss method
reads the kept scale on every call: the first backward frees the scale's graph, and the next
call's loss goes back through it."""
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw = nn.Parameter(torch.zeros(1))
        self.layer = nn.Linear(3, 1)
        self.scale = torch.sigmoid(self.raw) * 2.0  # made

    def loss(self, x, y):
        return ((self.layer(x) * self.scale - y) ** 2).mean()  # reads


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(6, 3), torch.randn(6, 1)
    opt.zero_grad()
    loss = model.loss(x, y)
    loss.backward()
    opt.step()
print("TRAINED")
