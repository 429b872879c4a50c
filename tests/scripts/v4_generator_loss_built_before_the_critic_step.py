"""A GAN round that builds both losses first, then steps the generator and then the critic:
the critic's loss goes back through the generator's graph, which the generator's backward
freed. Detaching the generated batch in the generator's own loss would run without an error,
and the generator would still get gradients, from the critic's loss, after its own step; its
next zero_grad() clears them before it steps again: it would never train."""
import torch
from torch import nn

torch.manual_seed(0)
gen = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 4))
critic = nn.Sequential(nn.Linear(4, 6), nn.LeakyReLU(0.2), nn.Linear(6, 1), nn.Sigmoid())
opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3)
bce = nn.BCELoss()
for it in range(3):
    real, fake = torch.randn(8, 4), gen(torch.randn(8, 3))
    loss_g = bce(critic(fake), torch.ones(8, 1))  # generator
    loss_c = bce(critic(real), torch.ones(8, 1)) + bce(critic(fake), torch.zeros(8, 1))
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
    opt_c.zero_grad()
    loss_c.backward()  # fails
    opt_c.step()
print("TRAINED")
