"""A layer that keeps its weights in a box by clipping them in its own forward, right after
using them (the clip belongs after the optimizer's step)."""
import torch
from torch import nn
from torch.nn import functional as F


class BoxedLinear(nn.Linear):
    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        with torch.no_grad():
            self.weight.clamp_(-0.3, 0.3)  # write: net[2].weight
        return y


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), BoxedLinear(6, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    loss = F.mse_loss(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
