"""Dropped by a rule: a GAN keeps its generated batch, the generator's optimizer step changes
the generator's weights in place, then the discriminator's loss reuses the kept batch."""
import torch
from torch import nn

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
netD = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
optG = torch.optim.SGD(netG.parameters(), lr=0.1)
optD = torch.optim.SGD(netD.parameters(), lr=0.1)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(16, 2)
ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)

noise = torch.randn(16, 3)
fake = netG(noise)  # enters: fake
optG.zero_grad()
lossG = bce(netD(fake), ones)
lossG.backward(retain_graph=True)
optG.step()
optD.zero_grad()
lossD = bce(netD(real), ones) + bce(netD(fake), zeros)
lossD.backward()
# page: 08_retain_step_backward
