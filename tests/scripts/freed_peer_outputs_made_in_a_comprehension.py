"""Two peers taught from each other's outputs: the first peer's loss reads the second peer's
output without detaching it, so its backward frees both graphs before the second peer's loss."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
peers = [nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)) for _ in range(2)]
opts = [torch.optim.SGD(p.parameters(), lr=0.1) for p in peers]
for batch in range(2):
    x = torch.randn(6, 4)
    y = torch.randint(0, 3, (6,))
    outs = [peer(x) for peer in peers]  # got
    for me in range(2):
        other = 1 - me
        loss = F.cross_entropy(outs[me], y) + F.mse_loss(outs[me], outs[other])  # read
        opts[me].zero_grad()
        loss.backward()
        opts[me].step()
