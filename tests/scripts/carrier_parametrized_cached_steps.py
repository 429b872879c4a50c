"""A weight-normalised layer trained inside one parametrize.cached() block that spans two steps:
the cache keeps the weight the first step computed, with its graph, for the second."""
import torch
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import weight_norm

torch.manual_seed(0)
layer = weight_norm(nn.Linear(3, 2))
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
with parametrize.cached():
    for step in range(2):
        x, y = torch.randn(5, 3), torch.randn(5, 2)
        loss = (layer(x) - y).pow(2).mean()  # enters: layer.weight
        opt.zero_grad()
        loss.backward()  # page: 16_module_state_with_history
        opt.step()
print("TRAINED")
