"""A chain of coupled pressures filled one column at a time in ``forward``: each column is
written in place from a product that reads the whole tensor, and that product saved it, so the
next column's write changes what the product needs."""
import torch
from torch import nn


class Chain(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.coupling = nn.Parameter(torch.randn(k, k) * 0.3)
        self.k = k

    def forward(self, inflow):
        p = inflow.clone()
        for i in range(self.k):
            p[:, i] = inflow[:, i] + torch.tanh(p @ self.coupling[:, i])  # write
        return p


torch.manual_seed(0)
chain = Chain(4)
optimizer = torch.optim.SGD(chain.parameters(), lr=0.1)
for step in range(3):
    inflow, target = torch.randn(8, 4), torch.randn(8, 4)
    loss = (chain(inflow) - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
