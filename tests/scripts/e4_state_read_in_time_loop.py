"""Truncated backpropagation over chunks of a sequence: the state object's detach() has its
careful branch switched off, and the branch that runs rebinds a loop variable, so the state that
the inner loop over time steps reads keeps the previous chunk's graph. The detach belongs before
that inner loop, once a chunk: before each time step it would cut the graph between steps too."""
import torch
from torch import nn


class State:
    careful = False

    def __init__(self, h):
        self.h = h

    def detach(self):
        if State.careful:
            self.h = self.h.detach()
        else:
            for t in (self.h,):
                t = t.detach()


torch.manual_seed(0)
cell = nn.GRUCell(3, 4)
opt = torch.optim.SGD(cell.parameters(), lr=0.1)
sequence = torch.randn(6, 2, 3)
state = State(torch.zeros(2, 4))
for chunk in sequence.split(2):
    for x in chunk:
        state.h = cell(x, state.h)
    loss = state.h.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    state.detach()
print("trained")
