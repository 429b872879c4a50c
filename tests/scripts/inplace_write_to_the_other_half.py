"""An additive coupling: one half of a tensor goes through a layer (whose node saves it), and
the program adds the result into the other half in place. The halves are views of one tensor:
they share its version counter, so writing one half moves the version of the half the layer
saved."""
import torch
from torch import nn

torch.manual_seed(0)


def couple(z, net):
    z1, z2 = z[:, :3], z[:, 3:]
    t = net(z1)
    z2 += t  # write
    return torch.cat([z1, z2], dim=1)


lift = nn.Linear(4, 6)
net = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
optimizer = torch.optim.SGD([*lift.parameters(), *net.parameters()], lr=0.1)
for step in range(3):
    x = torch.randn(5, 4)
    loss = couple(lift(x), net).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
