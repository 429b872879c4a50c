"""shared_trunk, a step in between: two losses over one forward, the optimizer steps after the
first backward; the second backward meets the freed graph (and retaining it would meet the
stepped weights)."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(5, 4), torch.randn(5, 2)
out = net(x)
out.pow(2).mean().backward()
opt.step()
opt.zero_grad()
(out - y).abs().mean().backward()
