"""A model run a second time on its first output (a correction added to it), after the first pass's backward and step."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
clean = torch.randn(6, 4)
noisy = clean + 0.3 * torch.randn(6, 4)
for epoch in range(3):
    coarse = net(torch.cat([noisy, torch.zeros_like(noisy)], 1))
    first_loss = (coarse - clean).pow(2).mean()
    opt.zero_grad()
    first_loss.backward()
    opt.step()
    fine = coarse + net(torch.cat([noisy, coarse], 1))  # enters: coarse
    second_loss = (fine - clean).pow(2).mean()
    opt.zero_grad()
    second_loss.backward()
    opt.step()
# page: 04_two_networks
