"""A module keeps a running scale; its forward stores what a plain helper function returns, and
the helper blends the new scale from this batch's graph. The next step reads the kept scale,
whose graph the first step's backward freed."""
import torch
from torch import nn


def blend(old, batch, rate):
    return rate * old + (1 - rate) * batch.abs().mean(0)


class RunningScale(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.scale = torch.ones(width)

    def forward(self, x):
        h = self.proj(x)
        out = h / (self.scale + 1)  # read
        self.scale = blend(self.scale, h, 0.9)  # got
        return out


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 5), RunningScale(5), nn.Linear(5, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = model(torch.randn(4, 3)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
