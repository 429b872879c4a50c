"""Invented: a DCGAN-style step whose discriminator step forgets fake.detach(). The names
`output` and `errD_fake` are assigned in the iteration before they are read; only `fake`
brings the old graph into the generator's step."""
import torch
from torch import nn

torch.manual_seed(0)
nz = 4
netG = nn.Sequential(nn.Linear(nz, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
netD = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
criterion = nn.BCELoss()
optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4)
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4)
data = [torch.randn(12, 8) for _ in range(2)]
for i, real in enumerate(data):
    netD.zero_grad()
    label = torch.full((12, 1), 1.0)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    noise = torch.randn(12, nz)
    fake = netG(noise)
    label.fill_(0.0)
    output = netD(fake)
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    netG.zero_grad()
    label.fill_(1.0)
    output = netD(fake)  # enters: fake
    errG = criterion(output, label)
    errG.backward()
    optimizerG.step()
# page: 12_gan_discriminator
# not: output errD_fake errD_real errD
