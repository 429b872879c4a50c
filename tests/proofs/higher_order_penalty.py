"""higher_order: a gradient penalty whose gradient was taken without create_graph."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
x = torch.randn(5, 3, requires_grad=True)
out = net(x)
(g,) = torch.autograd.grad(out.sum(), x)
loss = out.mean() + g.pow(2).sum()
loss.backward()
