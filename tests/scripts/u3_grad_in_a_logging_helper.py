"""A helper logs the largest gradient entry with autograd.grad, then the loop calls backward."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(10, 4), torch.randn(10, 1)
largest = []


def largest_gradient(loss, params):
    grads = torch.autograd.grad(loss, params)
    return max(g.abs().max().item() for g in grads)


for step in range(3):
    loss = nn.functional.mse_loss(net(x), y)
    largest.append(largest_gradient(loss, list(net.parameters())))
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 14_grad_then_backward
