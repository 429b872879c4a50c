"""Gradient accumulation over micro-batches with a running total of their losses, read back
with .item() for the epoch's log line; the backward is taken through the running total."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data, target = torch.randn(32, 4), torch.randn(32, 1)
for epoch in range(2):
    running = 0.0
    for i, (xb, yb) in enumerate(zip(data.split(8), target.split(8))):
        loss = F.mse_loss(model(xb), yb) / 2
        running = running + loss  # enters: running
        running.backward()  # page: 06_accumulating_loss
        if i % 2 == 1:
            opt.step()
            opt.zero_grad()
    print(f"epoch {epoch}: {running.item():.4f}")
print("TRAINED")
