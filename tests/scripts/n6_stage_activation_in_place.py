"""A two-stage regressor with a hint loss on the first stage's pre-activation output; the second
stage starts with an activation made in place by a helper, so it overwrites that output."""
import torch
from torch import nn
from torch.nn import functional as F


def activation():
    return nn.LeakyReLU(0.1, inplace=True)  # changed by


torch.manual_seed(0)
first = nn.Linear(4, 6)
second = nn.Sequential(activation(), nn.Linear(6, 2))
opt = torch.optim.SGD([*first.parameters(), *second.parameters()], lr=0.1)
for step in range(3):
    x, hint, y = torch.randn(5, 4), torch.randn(5, 6), torch.randn(5, 2)
    h = first(x)
    loss = F.smooth_l1_loss(h, hint) + F.mse_loss(second(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
