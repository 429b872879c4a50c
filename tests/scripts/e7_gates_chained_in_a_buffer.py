"""Three gates multiplied one after the other, each product stored into the next row of one
preallocated table; each product's node saved rows of that table, which the next store changes.
Its fix: every product reads copies of the rows (not the row of the last store alone)."""
import torch
from torch import nn

torch.manual_seed(0)
gates = nn.ModuleList([nn.Linear(5, 1) for _ in range(3)])
opt = torch.optim.SGD(gates.parameters(), lr=0.1)


def chain(x):
    table = torch.ones(4, x.size(0))
    table[1] = table[0] * torch.sigmoid(gates[0](x)).squeeze(1)
    table[2] = table[1] * torch.sigmoid(gates[1](x)).squeeze(1)
    table[3] = table[2] * torch.sigmoid(gates[2](x)).squeeze(1)  # write: table
    return table[3]


for step in range(3):
    x, y = torch.randn(8, 5), torch.rand(8)
    loss = (chain(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
