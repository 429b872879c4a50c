"""Notebook 13: a tensor computed once, outside the loop, reused every step."""
import torch
from torch import nn

torch.manual_seed(0)
encoder, head = nn.Sequential(nn.Linear(4, 8), nn.Tanh()), nn.Linear(8, 1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.1)
features = encoder(x)  # once, outside the loop (built)
for step in range(3):
    opt.zero_grad()
    loss = ((head(features) - y) ** 2).mean()  # enters: features
    loss.backward()  # freed, fails
    opt.step()
