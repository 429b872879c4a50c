"""A training loop hands the network's output to a penalty helper that takes the penalty's
inputs as *args and backwards the penalty itself; the main loss's backward has already freed
the output's graph, so the helper's backward fails, and what holds the graph there is only an
entry of its *args tuple."""
import torch
from torch import nn

torch.manual_seed(0)

net = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05)


def smoothness(*tensors):
    return sum((t[1:] - t[:-1]).pow(2).mean() for t in tensors)


def penalise(weight, fn, *fn_args):
    penalty = weight * fn(*fn_args)
    penalty.backward()  # fails


x, y = torch.randn(20, 6), torch.randn(20, 1)
for step in range(3):
    opt.zero_grad()
    pred = torch.sigmoid(net(x))  # made
    loss = (pred - y).pow(2).mean()
    loss.backward()  # frees
    penalise(0.1, smoothness, pred)
    opt.step()
print("TRAINED")
