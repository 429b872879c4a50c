"""A layer caches the softmax of the weights it is given the first time it runs, and a loop
that perturbs those weights takes ``autograd.grad`` of the loss with respect to them, one call
per pass on the same line: the second pass reads the cached softmax, whose graph the first
pass's call freed (no loss is taken through a gradient here: the same statement, run again)."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.mix = None

    def forward(self, x, weights):
        if self.mix is None:
            self.mix = torch.softmax(weights, 0)  # made
        return self.lin(x * self.mix)


model = Mixer()
model.requires_grad_(False)
x, target = torch.randn(5, 4), torch.randint(0, 2, (5,))
delta = torch.zeros(4, requires_grad=True)
for it in range(3):
    loss = F.cross_entropy(model(x, delta), target)
    g, = torch.autograd.grad(loss, delta)  # fails
    with torch.no_grad():
        delta += 0.1 * g.sign()
print("DONE")
