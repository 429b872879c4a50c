"""Notebook 01: backward twice through the same graph."""
import torch

torch.manual_seed(0)
X, y = torch.randn(8, 3), torch.randn(8, 1)
w = torch.zeros(3, 1, requires_grad=True)
loss = ((X @ w - y) ** 2).mean()
loss.backward()
loss.backward()  # enters: loss
