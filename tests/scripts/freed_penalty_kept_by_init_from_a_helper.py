"""A factorisation model whose constructor computes a weight penalty once, through a helper
method, and keeps it; each batch adds it to the loss, and the second batch's backward reaches
the penalty's graph, freed by the first."""
import torch
from torch import nn

torch.manual_seed(0)


class Factors(nn.Module):
    def __init__(self, users=6, items=5, rank=3, decay=1e-3):
        super().__init__()
        self.users, self.items = nn.Embedding(users, rank), nn.Embedding(items, rank)
        self.decay = decay
        self.penalty = self.weight_penalty()  # kept

    def weight_penalty(self):
        total = torch.zeros(())
        for table in (self.users, self.items):
            total = total + self.decay * table.weight.pow(2).sum()  # made
        return total

    def forward(self, u, i):
        return (self.users(u) * self.items(i)).sum(1)


model = Factors()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
u, i, r = torch.randint(0, 6, (16,)), torch.randint(0, 5, (16,)), torch.rand(16)
for epoch in range(3):
    loss = (model(u, i) - r).pow(2).mean() + model.penalty
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
