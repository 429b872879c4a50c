"""An embedding table with max_norm: its weight read by a penalty, then the lookup renormalizes
the looked-up rows of that same weight in place (inside torch's embedding)."""
import torch
from torch import nn

torch.manual_seed(0)
table = nn.Embedding(10, 4, max_norm=1.0)
penalty = (table.weight ** 2).sum()  # built
rows = table(torch.tensor([1, 2, 3]))  # write named: table.weight
loss = penalty + rows.sum()
loss.backward()  # fails
