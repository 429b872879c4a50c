"""A propagation layer keeps the row-normalised mixing matrix it made from the edge weights it
was given, and reads it back on later calls; a loop that attacks the edge weights takes
``autograd.grad`` with respect to them each pass, on the same line: the second pass reads the
kept matrix, whose graph the first pass's call freed."""
import torch
from torch import nn

torch.manual_seed(0)


class Propagate(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, 2)
        self.norm = None

    def forward(self, x, weights):
        if self.norm is not None and self.training:
            mix = self.norm  # reused
        else:
            mix = weights / weights.sum(1, keepdim=True)
            self.norm = mix
        return self.lin(mix @ x)


layer = Propagate(3)
layer.requires_grad_(False)
x, target = torch.randn(4, 3), torch.randn(4, 2)
weights = torch.rand(4, 4) + 0.5
attack = torch.zeros(4, 4, requires_grad=True)
for it in range(3):
    loss = ((layer(x, weights + attack) - target) ** 2).mean()
    g, = torch.autograd.grad(loss, attack)  # fails
    with torch.no_grad():
        attack += 0.05 * g.sign()
print("DONE", attack.abs().sum().item())
