"""A super-resolution GAN: the discriminator's loss scores real images and the upscaled ones,
not detached, so its backward also goes through the generator; after the discriminator's step
the generator's loss reuses that score of the upscaled images, whose graph is freed."""
import torch
from torch import nn

torch.manual_seed(0)
upscaler = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(4, 1, 3, padding=1))
judge = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Flatten(),
                      nn.Linear(4 * 4 * 4, 1), nn.Sigmoid())
opt_up = torch.optim.Adam(upscaler.parameters(), lr=1e-3)
opt_judge = torch.optim.Adam(judge.parameters(), lr=1e-3)

for step in range(3):
    small, sharp = torch.rand(2, 1, 4, 4), torch.rand(2, 1, 8, 8)
    upscaled = upscaler(small)  # upscaled
    real_score = judge(sharp).mean()
    fake_score = judge(upscaled).mean()  # scored
    judge_loss = 1 - real_score + fake_score
    opt_judge.zero_grad()
    judge_loss.backward()
    opt_judge.step()
    opt_up.zero_grad()
    up_loss = (upscaled - sharp).pow(2).mean() + 1e-3 * (1 - fake_score)  # reused
    up_loss.backward()  # fails
    opt_up.step()
print("TRAINED")
