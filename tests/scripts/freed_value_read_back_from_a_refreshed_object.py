"""A data object recomputes, each epoch, a weighting from a learned temperature and keeps it on
itself (``data.refresh()``); the epoch reads it back into a name (``weights = data.weights``)
and takes several optimiser steps with it: the second step goes back into the graph the first
one freed. The name gets the graph where it is read back, not where ``refresh`` ran."""
import torch


class Data:
    def __init__(self, temperature):
        self.temperature = temperature

    def refresh(self):
        self.weights = torch.softmax(torch.arange(4.0) / self.temperature.exp(), 0)
        return torch.randn(16, 4)


torch.manual_seed(0)
temperature = torch.zeros((), requires_grad=True)
w = torch.randn(4, requires_grad=True)
optimizer = torch.optim.SGD([temperature, w], lr=0.1)
data = Data(temperature)
for epoch in range(2):
    x = data.refresh()
    weights = data.weights  # kept
    for inner in range(2):
        loss = ((x * w) @ weights).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # fails
        optimizer.step()
print("TRAINED")
