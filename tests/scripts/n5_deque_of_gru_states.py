"""A streaming GRU trained in chunks: the last few hidden states are kept in a bounded deque,
and each chunk starts from the newest one, which still holds the graph of the chunk before."""
from collections import deque

import torch
from torch import nn

torch.manual_seed(0)
CHUNK = 3

gru = nn.GRUCell(2, 5)
readout = nn.Linear(5, 2)
optimizer = torch.optim.SGD([*gru.parameters(), *readout.parameters()], lr=0.05)
signal = torch.randn(4 * CHUNK + 1, 1, 2)


def train_chunk(memory, frames):
    total = 0.0
    for t in range(CHUNK):
        hidden = gru(frames[t], memory[-1])  # enters: memory[-1]
        memory.append(hidden)
        total = total + (readout(hidden) - frames[t + 1]).pow(2).mean()
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    return total


memory = deque([torch.zeros(1, 5)], maxlen=CHUNK)
for start in range(0, 4 * CHUNK, CHUNK):
    train_chunk(memory, signal[start:start + CHUNK + 1])
print("chunks trained")
