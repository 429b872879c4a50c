"""Notebook 05's bug in a script that first makes its run's folder (without exist_ok): a second
run in the same place fails on os.mkdir, edited or not."""
import os

import torch

os.mkdir("run_001")
torch.manual_seed(0)
cell = torch.nn.GRUCell(3, 4)
h = torch.zeros(2, 4)
for step in range(3):
    h = cell(torch.randn(2, 3), h)  # enters: h
    h.pow(2).mean().backward()
