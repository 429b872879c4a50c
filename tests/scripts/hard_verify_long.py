"""Notebook 05's bug after a healthy phase of 12 training steps: the re-run repeats them."""
import torch

torch.manual_seed(0)
w = torch.ones(3, requires_grad=True)
for step in range(12):
    (w * w).sum().backward()
cell = torch.nn.GRUCell(3, 4)
h = torch.zeros(2, 4)
for step in range(3):
    h = cell(torch.randn(2, 3), h)  # enters: h
    h.pow(2).mean().backward()
