"""A classifier with a learned temperature kept positive by a softplus: the temperature is
computed from its parameter once, before the loop, and divides every step's logits. The first
backward frees that small graph; the second step's backward reaches it again and fails. Kept as
a constant, the temperature would never be trained; made again in each step, it is."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 3)
        self.raw_t = nn.Parameter(torch.zeros(()))

    def forward(self, x):
        return self.body(x)


net = Scaled()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
temperature = F.softplus(net.raw_t) + 0.1  # made
for step in range(4):
    x, y = torch.randn(12, 6), torch.randint(0, 3, (12,))
    logits = net(x) / temperature  # enters
    loss = F.cross_entropy(logits, y)
    loss.backward()  # fails
    opt.step()
    opt.zero_grad()
print("TRAINED")
