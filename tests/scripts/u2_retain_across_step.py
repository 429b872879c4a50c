"""Two losses over one forward with a step in between: keeping the first graph would meet the
weights the step changed, so retain_graph=True is no fix here."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(3):
    x, y = torch.randn(5, 4), torch.randn(5, 2)
    out = net(x)
    opt.zero_grad()
    out.pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
    (out - y).abs().mean().backward()  # enters: out
    opt.step()
