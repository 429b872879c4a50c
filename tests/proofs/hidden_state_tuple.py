"""hidden_state, a tuple state: an LSTM's (h, c), None before the first chunk."""
import torch
from torch import nn

torch.manual_seed(0)
lstm, head = nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 1)
seq, target = torch.randn(2, 12, 3), torch.randn(2, 12, 1)
state = None
for start in range(0, 12, 4):
    out, state = lstm(seq[:, start:start + 4], state)
    loss = nn.functional.mse_loss(head(out), target[:, start:start + 4])
    loss.backward()
