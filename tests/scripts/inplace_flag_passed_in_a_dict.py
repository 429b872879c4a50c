"""A head built as a Sequential whose layers take their ``inplace`` flag from a dict of
keywords (``**options``, ``{"inplace": inplace}``, the parameter's default True): the dropout
after the activation writes, in place, the activation's output that the activation's node
saved, and the first backward fails."""
import torch
from torch import nn


class Head(nn.Sequential):
    def __init__(self, sizes, inplace=True, p=0.3):  # default
        options = {"inplace": inplace}
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.LeakyReLU(0.1, **options), nn.Dropout(p, **options)]
        super().__init__(*layers)


torch.manual_seed(0)
head = Head([6, 12, 4])
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(10, 6), torch.randn(10, 4)
    loss = (head(x) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
