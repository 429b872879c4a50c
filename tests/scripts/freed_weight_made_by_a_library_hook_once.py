"""A spectrally normalised layer is called once to check its output; the loop then hands the
layer's weight, which the library's hook computed at that call, to a functional forward."""
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import spectral_norm

warnings.filterwarnings("ignore")
torch.manual_seed(0)
layer = spectral_norm(nn.Linear(3, 2))
print(layer(torch.randn(1, 3)).shape)  # got
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
for step in range(3):
    inputs = torch.randn(4, 3)
    loss = F.linear(inputs, layer.weight, layer.bias).pow(2).mean()  # read
    optimizer.zero_grad()
    loss.backward()  # held
    optimizer.step()
