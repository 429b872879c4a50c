"""Pages from words: one loss backwarded, then backwarded again with a weight penalty added in
the same step; a plain backward twice through the loss, not two networks."""
import torch
from torch import nn

torch.manual_seed(0)
first, second = nn.Linear(3, 4), nn.Linear(4, 1)
params = list(first.parameters()) + list(second.parameters())
opt = torch.optim.SGD(params, lr=0.1)
for step in range(2):
    hidden = torch.relu(first(torch.randn(8, 3)))
    loss = second(hidden).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    penalty = sum(p.pow(2).sum() for p in params)
    (loss + 1e-3 * penalty).backward()  # enters: loss
    opt.step()
# page: 01_backward_twice
