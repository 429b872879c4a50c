"""A potential whose forward takes the forces (the gradient of its energy with respect to the
positions) without keeping the graph, and returns the energy reshaped: the training loss over
the energy and the forces backwards through the graph that the gradient freed."""
import torch
from torch import nn

torch.manual_seed(0)


class Potential(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, positions):
        positions = positions.detach().requires_grad_(True)
        energy = self.net(positions).sum()
        (grad,) = torch.autograd.grad(energy, positions)
        return energy.reshape(1), -grad


model = Potential()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    positions = torch.randn(5, 3)
    target_energy, target_forces = torch.randn(1), torch.randn(5, 3)
    energy, forces = model(positions)  # enters: energy
    loss = (energy - target_energy).pow(2).mean() + (forces - target_forces).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
