"""A script that already uses diagnose_on_error() itself."""
import torch

from autograd_lens import diagnose_on_error

torch.manual_seed(0)
cell = torch.nn.GRUCell(3, 4)
h = torch.zeros(2, 4)
with diagnose_on_error():
    for step in range(3):
        h = cell(torch.randn(2, 3), h)  # enters: h
        h.pow(2).mean().backward()
