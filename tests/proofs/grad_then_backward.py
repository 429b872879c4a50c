"""grad_then_backward: a saliency map with autograd.grad, then backward of the same loss."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))
x = torch.randn(4, 5, requires_grad=True)
label = torch.tensor([0, 1, 2, 0])
loss = nn.functional.cross_entropy(net(x), label)
(x_grad,) = torch.autograd.grad(loss, x)
saliency = x_grad.abs().amax(dim=1)
loss.backward()
