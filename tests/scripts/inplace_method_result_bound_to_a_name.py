"""A scorer exponentiates its projection and transposes the result in place in the same
statement, binding it to a name; the exponential saved its result, which the in-place transpose
then changes."""
import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 4)

    def forward(self, x):
        scores = torch.exp(self.proj(x)).t_()  # write
        return scores.sum(0)


torch.manual_seed(0)
model = Scorer()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    loss = model(torch.randn(5, 3)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
