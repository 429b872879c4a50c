"""gan_discriminator: the discriminator step without fake.detach()."""
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
bce = nn.BCEWithLogitsLoss()
real, z = torch.randn(16, 2) + 2.0, torch.randn(16, 2)
ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
for step in range(2):
    fake = G(z)
    D.zero_grad()
    d_loss = bce(D(real), ones) + bce(D(fake), zeros)
    d_loss.backward()
    G.zero_grad()
    g_loss = bce(D(fake), ones)
    g_loss.backward()
