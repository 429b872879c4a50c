"""Pages from the graph: the recurrent state lives in a generator's own frame, where no name of
the failing step reaches it (no carrier); the graph still shows the same cell run again on an
old output, a recurrence."""
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.RNNCell(2, 3)


def states(cell):
    h = torch.zeros(1, 3)
    while True:
        x = yield h
        h = cell(x, h)


stream = states(cell)
next(stream)
for step in range(3):
    out = stream.send(torch.randn(1, 2))
    out.pow(2).sum().backward()
# page: 05_rnn_hidden_state
