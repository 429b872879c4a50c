"""The wrong tensor: the failing backward runs inside a helper whose parameter is called
`loss`; the caller's running total is what carries the old graph."""
import torch
from torch import nn


def backward_and_step(loss, optimizer):
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


torch.manual_seed(0)
net = nn.Linear(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
running = 0.0
for step in range(3):
    batch = torch.randn(6, 4)
    running = running + net(batch).pow(2).mean()  # enters: running
    backward_and_step(running, opt)
# page: 06_accumulating_loss
