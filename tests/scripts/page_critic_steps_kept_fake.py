"""A Wasserstein critic trained several times per generator step on one batch of fakes made before its loop."""
import torch
from torch import nn

torch.manual_seed(3)
maker = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 4))
judge = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.1), nn.Linear(8, 1))
judge_opt = torch.optim.RMSprop(judge.parameters(), lr=5e-4)
maker_opt = torch.optim.RMSprop(maker.parameters(), lr=5e-4)
for outer in range(2):
    noise, data = torch.randn(8, 2), torch.randn(8, 4)
    made = maker(noise)
    for inner in range(3):
        judge_opt.zero_grad()
        gap = judge(made).mean() - judge(data).mean()
        gap.backward()  # page: 12_gan_discriminator
        judge_opt.step()
    maker_opt.zero_grad()
    (-judge(maker(noise)).mean()).backward()
    maker_opt.step()
