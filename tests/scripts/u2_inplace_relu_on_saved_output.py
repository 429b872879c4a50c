"""In place, one backward: `h.relu_()` overwrites the output that tanh saved."""
import torch
from torch import nn

torch.manual_seed(0)
layer, head = nn.Linear(5, 8), nn.Linear(8, 1)
params = list(layer.parameters()) + list(head.parameters())
opt = torch.optim.Adam(params, lr=1e-2)
data = torch.randn(10, 5)
labels = torch.randn(10, 1)


def train_step(batch, y):
    h = torch.tanh(layer(batch))
    h.relu_()  # write: h
    loss = nn.functional.mse_loss(head(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


for epoch in range(3):
    train_step(data, labels)
# page: mental_model
