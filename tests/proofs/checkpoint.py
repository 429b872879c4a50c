"""checkpoint: backward twice through a checkpointed block."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
stem, block, head = nn.Linear(4, 6), nn.Sequential(nn.Linear(6, 6), nn.Tanh()), nn.Linear(6, 1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
loss = ((head(checkpoint(block, stem(x).tanh(), use_reentrant=False)) - y) ** 2).mean()
loss.backward()
loss.backward()
