"""Scores of the network before the minibatch updates kept to bound how far each update moves
them (a clipped objective, as in PPO's value clipping); computed with grad once per round."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Linear(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, target = torch.randn(8, 4), torch.randn(8)
for rnd in range(2):
    old = net(x).squeeze(1)
    for mb in torch.arange(8).split(4):
        now = net(x[mb]).squeeze(1)
        bounded = old[mb] + (now - old[mb]).clamp(-0.05, 0.05)
        loss = torch.max((now - target[mb]) ** 2, (bounded - target[mb]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print("TRAINED")
