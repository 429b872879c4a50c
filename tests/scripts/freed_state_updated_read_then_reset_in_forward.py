"""A spiking neuron module keeps its membrane potential on itself: its forward updates it from
its last value, fires from it, then resets it by the spike, and runs several times a batch; it
is never cleared between batches, so the next batch's first update reads the last one's graph."""
import torch
from torch import nn
from torch.nn import functional as F


class Neuron(nn.Module):
    def __init__(self, beta=0.9):
        super().__init__()
        self.beta = beta
        self.mem = torch.zeros(1)

    def forward(self, current):
        self.mem = self.beta * self.mem + current  # read
        spike = torch.sigmoid(4.0 * (self.mem - 1.0))
        self.mem = self.mem - spike  # reset
        return spike


torch.manual_seed(0)
layer = nn.Linear(6, 3)
neuron = Neuron()
opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
for batch in range(3):
    x, y = torch.rand(4, 6), torch.randint(0, 3, (4,))
    spikes = torch.stack([neuron(layer(x)) for _ in range(4)])
    loss = F.cross_entropy(spikes.sum(0), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
