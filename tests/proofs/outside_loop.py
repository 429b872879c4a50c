"""outside_loop: features computed once before the loop, used in every step."""
import torch
from torch import nn

torch.manual_seed(0)
encoder, head = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Linear(6, 1)
x, y = torch.randn(10, 4), torch.randn(10, 1)
features = encoder(x)
for step in range(3):
    loss = (head(features) - y).pow(2).mean()
    loss.backward()
