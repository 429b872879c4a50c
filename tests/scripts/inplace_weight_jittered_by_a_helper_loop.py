"""Weight noise: a helper adds noise to every parameter, in a loop over them, between the
forward and the backward that needs the weights the forward saved."""
import torch
from torch import nn


@torch.no_grad()
def jitter(module, scale):
    for w in module.parameters():
        w.add_(scale * torch.randn_like(w))  # write


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(2):
    loss = net(torch.randn(6, 3)).pow(2).mean()
    jitter(net, 0.01)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
