"""higher_order: a gradient taken for a look, then a loss through the same graph again."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
x = torch.randn(5, 3, requires_grad=True)
out = net(x)
(g,) = torch.autograd.grad(out.sum(), x)
sensitivity = g.abs().mean()
loss = out.pow(2).mean()
loss.backward()
