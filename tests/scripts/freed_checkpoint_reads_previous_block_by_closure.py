"""Refinement rounds, each a reentrant checkpoint whose block reads the previous round's output
through a closure, not as an input: in the step's backward, the last block's own backward goes
on into the previous round's checkpoint and frees it, and the step's backward then reaches that
round again through its own loss term."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
encode, refine, score = nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 1)
opt = torch.optim.SGD([*encode.parameters(), *refine.parameters(), *score.parameters()], lr=0.05)

for step in range(3):
    x, y = torch.randn(5, 4), torch.randn(5, 1)
    state = encode(x)
    losses = []
    for round_ in range(3):
        def block(h, previous=state):
            return torch.tanh(refine(previous) + h)
        state = checkpoint(block, torch.ones(1, requires_grad=True), use_reentrant=True)  # block
        losses.append((score(state) - y).pow(2).mean())
    opt.zero_grad()
    sum(losses).backward()  # fails
    opt.step()
print("TRAINED")
