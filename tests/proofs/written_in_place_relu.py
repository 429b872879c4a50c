"""written_in_place: `h.relu_()` overwrites the output that tanh saved; one backward."""
import torch
from torch import nn

torch.manual_seed(0)
layer, head = nn.Linear(5, 8), nn.Linear(8, 1)
x, y = torch.randn(10, 5), torch.randn(10, 1)
h = torch.tanh(layer(x))
h.relu_()
loss = nn.functional.mse_loss(head(h), y)
loss.backward()
