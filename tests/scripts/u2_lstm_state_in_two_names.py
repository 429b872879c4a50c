"""An LSTM's state kept in two names, `out, (h, c) = lstm(x, (h, c))`: both carry the old graph."""
import torch
from torch import nn

torch.manual_seed(0)
lstm, head = nn.LSTM(3, 5, batch_first=True), nn.Linear(5, 1)
opt = torch.optim.SGD(list(lstm.parameters()) + list(head.parameters()), lr=0.1)
series = torch.randn(2, 12, 3)
h = torch.zeros(1, 2, 5)
c = torch.zeros(1, 2, 5)
for start in range(0, 12, 4):
    x, y = series[:, start:start + 4], series[:, start:start + 4, :1]
    out, (h, c) = lstm(x, (h, c))  # enters: h
    loss = nn.functional.mse_loss(head(out), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 05_rnn_hidden_state
