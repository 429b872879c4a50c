"""Training code run with exec (as a config-driven runner does): its globals are the program's."""
import torch

SOURCE = """
w = torch.ones(3, requires_grad=True)
h = torch.zeros(3)
for step in range(3):
    h = torch.tanh(w * h + 1)  # enters: h
    h.sum().backward()
"""
exec(compile(SOURCE, "<training>", "exec"), {"torch": torch})
