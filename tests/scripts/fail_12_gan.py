"""Notebook 12: the discriminator step without fake.detach(), then the generator step."""
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
bce = nn.BCEWithLogitsLoss()
real, z = torch.randn(64, 2) * 0.5 + 2.0, torch.randn(64, 2)
is_real, is_fake = torch.ones(64, 1), torch.zeros(64, 1)
for step in range(2):
    fake = G(z)
    D.zero_grad()
    d_loss = bce(D(real), is_real) + bce(D(fake), is_fake)
    d_loss.backward()
    G.zero_grad()
    g_loss = bce(D(fake), is_real)  # enters: fake
    g_loss.backward()
