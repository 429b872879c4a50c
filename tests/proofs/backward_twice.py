"""backward_twice: a loss's backward called twice."""
import torch

torch.manual_seed(0)
x = torch.randn(6, 3)
w = torch.randn(3, requires_grad=True)
loss = (x @ w).tanh().pow(2).mean()
loss.backward()
loss.backward()
