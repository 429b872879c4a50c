"""Each epoch runs inside the program's own timing block (a ``with`` whose exit lets errors
pass); the running sum of the epoch's losses is kept as a tensor across epochs."""
import time

import torch
from torch import nn

torch.manual_seed(0)


class Timed:
    def __init__(self, label):
        self.label = label

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *error):
        self.seconds = time.perf_counter() - self.start
        return False


model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
running = torch.zeros(())
for epoch in range(3):
    with Timed(f"epoch {epoch}"):
        loss = model(torch.randn(8, 3)).pow(2).mean()
        running = running + loss  # enters: running
        optimizer.zero_grad()
        running.backward()
        optimizer.step()
print("epochs done")
