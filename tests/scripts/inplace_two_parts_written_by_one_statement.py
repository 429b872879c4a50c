"""One statement writes a part of two tensors from a function of those very parts
(``a[:, 1:], b[:, 1:] = mix(a[:, 1:], b[:, 1:])``): the product inside saved both parts, views
of one layer's output, which the two writes then change. Copying what is read of both tensors
keeps what the product saved."""
import torch
from torch import nn

torch.manual_seed(0)


def mix(u, w):
    return u * w, u - w


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 8)

    def forward(self, x):
        h = self.lin(x)
        a, b = h[:, :4], h[:, 4:]
        a[:, 1:], b[:, 1:] = mix(a[:, 1:], b[:, 1:])  # write
        return (a * b).sum(1, keepdim=True)


model = Pair()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    loss = (model(x) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
