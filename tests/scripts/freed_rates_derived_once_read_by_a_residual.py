"""Two positive rates derived once, before training, from trainable raw values, and read by a
residual function that each step calls: the second step's backward goes back into the
derivation the first step's backward freed."""
import torch
from torch import nn

torch.manual_seed(0)
raw_a = torch.tensor(0.2, requires_grad=True)
raw_b = torch.tensor(-0.1, requires_grad=True)
a = torch.exp(raw_a)
b = nn.functional.softplus(raw_b)
net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))


def residual(t, y):
    return y * a - b * t  # enters


optimizer = torch.optim.Adam([*net.parameters(), raw_a, raw_b], lr=1e-2)
for step in range(3):
    t = torch.rand(12, 1)
    loss = residual(t, net(t)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
