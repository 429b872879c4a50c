"""Notebook 05's carried state, with the cell compiled: the graph runs through a compiled region."""
import torch

torch.manual_seed(0)
cell = torch.nn.Linear(3, 3)
step_fn = torch.compile(lambda x, h: cell(x + h).tanh(), backend="aot_eager")
h = torch.zeros(2, 3)
for step in range(3):
    h = step_fn(torch.randn(2, 3), h)  # enters: h
    loss = h.pow(2).sum()
    loss.backward()
