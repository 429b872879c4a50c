"""A block whose activation and dropout both write in place: the dropout writes the output that
the activation's node saved (the write runs in torch, inside the module's forward)."""
import torch
from torch import nn

torch.manual_seed(0)
block = nn.Sequential(nn.Linear(5, 7), nn.ELU(inplace=True), nn.Dropout(0.2, inplace=True),
                      nn.Linear(7, 1))
x = torch.randn(6, 5)
loss = block(x).pow(2).mean()  # built write named: block[2]
loss.backward()  # fails
