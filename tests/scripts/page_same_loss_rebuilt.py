"""The same loss written out twice on one prediction: once to train, once more after logging it."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(1)
net = nn.Sequential(nn.Linear(3, 5), nn.Softplus(), nn.Linear(5, 2))
opt = torch.optim.Adam(net.parameters(), lr=0.01)
inputs, wanted = torch.randn(7, 3), torch.randn(7, 2)
for epoch in range(2):
    guess = net(inputs)
    F.smooth_l1_loss(guess, wanted).backward()
    norm = sum(p.grad.norm() for p in net.parameters())
    F.smooth_l1_loss(guess, wanted).backward()  # page: 01_backward_twice
    opt.step()
    opt.zero_grad()
