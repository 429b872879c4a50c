"""A GAN's two updates in one function that takes both losses from its caller: the
discriminator steps before the generator's loss, built through the discriminator, goes
backward."""
import torch
from torch import nn

torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6))
discriminator = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()


def apply_updates(d_loss, g_loss):
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss.backward()  # fails
    opt_g.step()


for it in range(3):
    real, fake = torch.randn(5, 6), generator(torch.randn(5, 4))
    d_loss = bce(discriminator(real), torch.ones(5, 1)) + \
        bce(discriminator(fake.detach()), torch.zeros(5, 1))
    g_loss = bce(discriminator(fake), torch.ones(5, 1))
    apply_updates(d_loss, g_loss)
print("TRAINED")
