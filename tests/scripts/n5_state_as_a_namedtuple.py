"""An LSTM cell's state kept as a namedtuple with fields ``h`` and ``c``, carried from one
update to the next without being detached."""
from collections import namedtuple

import torch
from torch import nn

torch.manual_seed(0)
Memory = namedtuple("Memory", ["h", "c"])
lstm = nn.LSTMCell(2, 4)
score = nn.Linear(4, 1)
optimizer = torch.optim.SGD([*lstm.parameters(), *score.parameters()], lr=0.1)
memory = Memory(torch.zeros(1, 4), torch.zeros(1, 4))
for update in range(4):
    memory = Memory(*lstm(torch.randn(1, 2), (memory.h, memory.c)))  # enters: memory
    loss = score(memory.h).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("updates done", memory.h.shape)
