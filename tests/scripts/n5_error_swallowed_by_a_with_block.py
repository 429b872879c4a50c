"""A step whose error a ``with`` block swallows (``contextlib.suppress``): the program carries on
and ends normally, after a second failing step swallowed the same way."""
import contextlib

import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Linear(4, 4)
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1)
features = torch.tanh(encoder(torch.randn(5, 4)))
for step in range(3):
    with contextlib.suppress(RuntimeError):
        loss = features.pow(2).mean()  # enters: features
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
print("carried on")
