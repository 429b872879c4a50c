"""Notebook 14: autograd.grad for a saliency map, then backward through the same graph."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
x = torch.randn(5, 6, requires_grad=True)
target = torch.tensor([0, 1, 2, 0, 1])
loss = F.cross_entropy(net(x), target)
(x_grad,) = torch.autograd.grad(loss, x)
saliency = x_grad.abs().amax(dim=1)
loss.backward()  # enters: loss
