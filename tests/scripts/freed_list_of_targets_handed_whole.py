"""Targets taken once from two layers of a network whose weights still require grad, kept in a
list and handed whole to the loss in every step that optimizes an input image: the first step's
backward goes through both entries' graphs into the network and frees them."""
import torch
from torch import nn

torch.manual_seed(0)
layers = nn.ModuleList([nn.Linear(5, 5), nn.Linear(5, 5)])


def activations(x):
    found = []
    for layer in layers:
        x = torch.relu(layer(x))
        found.append(x)
    return found


def matching(current, wanted):
    return sum((c - w).pow(2).mean() for c, w in zip(current, wanted))


image = torch.zeros(1, 5, requires_grad=True)
opt = torch.optim.Adam([image], lr=0.1)
targets = activations(torch.rand(1, 5))  # taken
for step in range(4):
    opt.zero_grad()
    loss = matching(activations(image), targets)  # matched
    loss.backward()  # fails
    opt.step()
print("TRAINED")
