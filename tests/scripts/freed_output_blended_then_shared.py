"""Two stages trained jointly, each with its own optimizer: the first stage's output is blended
with the target under a mask, under the same name, and fed to the second stage; the second
stage's backward runs first, through the first stage's graph, and the first stage's own loss
then goes back through it."""
import torch
from torch import nn

torch.manual_seed(0)
net_a = nn.Sequential(nn.Linear(4, 8), nn.Sigmoid(), nn.Linear(8, 4))
net_b = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
opt_a = torch.optim.SGD(net_a.parameters(), lr=0.1)
opt_b = torch.optim.SGD(net_b.parameters(), lr=0.1)


def update(optimizer, loss):
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()


def train_step(x, target, mask):
    coarse = net_a(x)  # first
    loss_a = (coarse - target).abs().mean()
    coarse = coarse * mask + target * (1 - mask)  # blended
    loss_b = (net_b(coarse) - target).abs().mean()
    update(opt_b, loss_b)
    update(opt_a, loss_a)


for it in range(3):
    train_step(torch.randn(5, 4), torch.randn(5, 4), (torch.rand(5, 4) > 0.5).float())
print("TRAINED")
