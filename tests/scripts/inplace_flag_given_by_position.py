"""A block gates its input by a learned weight and also runs it through a Sequential that starts
with ``nn.ELU(1.0, True)``: the in-place flag given by position, as torch's signature places it.
The product's node saved the input, which the activation then writes."""
import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Parameter(torch.ones(1, 4))
        self.body = nn.Sequential(nn.ELU(1.0, True), nn.Linear(4, 4))  # made

    def forward(self, x):
        return torch.cat([x * self.gate, self.body(x)], 1)  # runs


model = nn.Sequential(nn.Linear(3, 4), Block(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    loss = (model(x) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
