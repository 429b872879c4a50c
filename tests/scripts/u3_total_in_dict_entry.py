"""A running total kept in a dict entry, whose mean is backwarded every batch."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
batches = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(5)]


def one_epoch(log):
    for x, y in batches:
        loss = nn.functional.mse_loss(net(x), y)
        log["total"] += loss  # enters: log["total"]
        log["steps"] += 1
        opt.zero_grad()
        (log["total"] / log["steps"]).backward()
        opt.step()
    return log


for epoch in range(2):
    summary = one_epoch({"total": torch.zeros(()), "steps": 0})
    print(epoch, float(summary["total"]) / summary["steps"])
# page: 06_accumulating_loss
