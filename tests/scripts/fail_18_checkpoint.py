"""Notebook 18: backward twice through a checkpointed block."""
import sys

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
stem, block, head = nn.Linear(16, 64), nn.Sequential(nn.Linear(64, 64), nn.Tanh()), nn.Linear(64, 1)
x, y = torch.randn(32, 16), torch.randn(32, 1)
reentrant = sys.argv[1:] == ["reentrant"]
loss = ((head(checkpoint(block, stem(x).tanh(), use_reentrant=reentrant)) - y) ** 2).mean()
loss.backward()
loss.backward()  # enters: loss
