"""Not searched: the recurrent state goes into a helper as a keyword argument, and the helper
reassigns it step by step."""
import torch
from torch import nn


def unroll(cell, inputs, state=None):
    for x in inputs:
        state = cell(x, state)
    return state


torch.manual_seed(0)
cell = nn.GRUCell(3, 5)
head = nn.Linear(5, 1)
opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
memory = torch.zeros(2, 5)
for chunk in range(3):
    inputs = torch.randn(4, 2, 3)
    memory = unroll(cell, inputs, state=memory)  # enters: memory
    loss = head(memory).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 05_rnn_hidden_state
