"""Lookahead-style training: a slow copy of the network is pulled towards the fast one by a
function of another module of the program, after the slow copy's forward and before the
backward through it (the pull belongs after the optimizer's step)."""
import copy

import torch
from torch import nn
from torch.nn import functional as F

from slow_weights import pull_towards

torch.manual_seed(0)
fast = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1))
slow = copy.deepcopy(fast)
opt = torch.optim.SGD(fast.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    agreement = F.mse_loss(fast(x), slow(x))
    pull_towards(slow, fast, 0.5)
    loss = F.mse_loss(fast(x), y) + 0.1 * agreement
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
