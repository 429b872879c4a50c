"""hidden_state, a nested tuple: two stacked LSTM cells' ((h1, c1), (h2, c2))."""
import torch
from torch import nn

torch.manual_seed(0)
low, high = nn.LSTMCell(3, 4), nn.LSTMCell(4, 4)
xs = torch.randn(3, 2, 3)
zeros = torch.zeros(2, 4)
states = ((zeros, zeros), (zeros, zeros))
for x in xs:
    first = low(x, states[0])
    second = high(first[0], states[1])
    states = (first, second)
    loss = second[0].pow(2).mean()
    loss.backward()
