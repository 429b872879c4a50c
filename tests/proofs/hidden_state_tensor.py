"""hidden_state, a tensor state: an RNN cell's state carried across steps."""
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.RNNCell(3, 4)
xs = torch.randn(4, 2, 3)
h = torch.zeros(2, 4)
for x in xs:
    h = cell(x, h)
    loss = h.pow(2).mean()
    loss.backward()
