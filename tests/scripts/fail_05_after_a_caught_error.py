"""Notebook 05's bug, after a smoke test that provokes the error on purpose and catches it: the
smoke test's tensors must be released as they are without the command, and the error that ends
the run is the one explained."""
import gc
import weakref

import torch


def smoke_test():
    x = torch.randn(1000, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError:
        pass
    return weakref.ref(x)


released = smoke_test()
gc.collect()
print("smoke test released its tensors:", released() is None)

torch.manual_seed(0)
cell = torch.nn.GRUCell(3, 4)
h = torch.zeros(2, 4)
for step in range(3):
    h = cell(torch.randn(2, 3), h)  # enters: h
    loss = h.pow(2).mean()
    loss.backward()
