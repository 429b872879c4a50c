"""Sharpness-aware training written by hand: the weights are nudged up the gradient in place
under no_grad, and the second loss reuses the first pass's prediction."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(10, 4), torch.randint(3, (10,))
    scores = model(x)
    opt.zero_grad()
    F.cross_entropy(scores, y).backward()
    nudges = []
    with torch.no_grad():
        for p in model.parameters():
            nudges.append(0.05 * p.grad / (p.grad.norm() + 1e-12))
            p.add_(nudges[-1])
    opt.zero_grad()
    F.cross_entropy(scores, y).backward()  # enters: scores
    with torch.no_grad():
        for p, n in zip(model.parameters(), nudges):
            p.sub_(n)
    opt.step()
print("TRAINED")
# page: 01_backward_twice
