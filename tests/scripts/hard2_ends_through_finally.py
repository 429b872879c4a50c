"""The error ends the program, on its way out through a try/finally (so it could have been
caught, and the diagnosis is said at the failure)."""
import torch


def train():
    torch.manual_seed(0)
    cell = torch.nn.GRUCell(3, 4)
    h = torch.zeros(2, 4)
    for step in range(3):
        h = cell(torch.randn(2, 3), h)  # enters: h
        try:
            h.pow(2).mean().backward()
        finally:
            print("step", step, "cleaned up")


train()
