"""A learned initial state (a parameter), expanded before each sequence's loop over chunks; the
next chunk starts from this chunk's last state, stored after the update."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
cell = nn.GRUCell(3, 4)
start = nn.Parameter(0.1 * torch.randn(1, 4))
opt = torch.optim.SGD(list(cell.parameters()) + [start], lr=0.1)
for seq in range(2):
    state = start.expand(2, -1)
    for chunk in range(3):
        h = cell(torch.randn(2, 3), state)
        loss = F.mse_loss(h, torch.ones(2, 4))
        opt.zero_grad()
        loss.backward()
        opt.step()
        state = h
print("TRAINED")
