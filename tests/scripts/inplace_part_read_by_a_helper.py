"""A helper mixes one row of a batch through a weight, and the loop writes each row's result back
into the same tensor. The product saved the row it read (a view of the tensor), which the loop's
write then changes: the node was made inside the helper, called from the write's line."""
import torch
from torch import nn


def mix(row, weight):
    return torch.tanh(row @ weight)  # saved


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 4)
        self.weight = nn.Parameter(torch.randn(4, 4) * 0.3)

    def forward(self, x):
        h = self.inp(x)
        for i in range(h.size(0)):
            h[i] = mix(h[i], self.weight)  # write
        return h.pow(2).sum()


torch.manual_seed(0)
model = Mixer()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(5, 3))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
