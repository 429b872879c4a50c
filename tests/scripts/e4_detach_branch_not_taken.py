"""A recurrent tagger keeps its memory in a small object whose release() has two branches; the
one switched on rebinds a loop variable, so the memory keeps the previous chunk's graph. The
careful branch, which would detach the attribute, never runs: a detach put before it would not
run either."""
import torch
from torch import nn


class Memory:
    exact = False

    def __init__(self, size):
        self.cells = (torch.zeros(1, size),)

    def release(self):
        if Memory.exact:
            self.cells = tuple(c.detach() for c in self.cells)
        else:
            for c in self.cells:
                c = c.detach()


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.RNNCell(2, 3)

    def forward(self, xs, memory):
        h = memory.cells[0]
        for x in xs:
            h = self.cell(x, h)
        memory.cells = (h,)
        return h


torch.manual_seed(0)
tagger = Tagger()
opt = torch.optim.SGD(tagger.parameters(), lr=0.1)
memory = Memory(3)
for xs in torch.randn(3, 2, 1, 2):
    loss = tagger(xs, memory).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    memory.release()
print("trained")
