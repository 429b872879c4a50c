"""A detach taken only every fourth step: `h` still carries the old graph on the other steps."""
import torch
from torch import nn

torch.manual_seed(0)
cell, head = nn.GRUCell(3, 6), nn.Linear(6, 1)
opt = torch.optim.Adam(list(cell.parameters()) + list(head.parameters()), lr=1e-2)
h = torch.zeros(4, 6)
for step in range(8):
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    if step % 4 == 0:
        h = h.detach()
    h = cell(x, h)  # enters: h
    loss = nn.functional.mse_loss(head(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 05_rnn_hidden_state
