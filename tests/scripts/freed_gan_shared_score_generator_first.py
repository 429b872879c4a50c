"""A GAN that scores each generated batch once and builds both losses from that one score; the
generator's update runs first, so the critic's backward meets a generator graph already freed."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
maker = nn.Sequential(nn.Linear(2, 12), nn.Tanh(), nn.Linear(12, 5))
judge = nn.Sequential(nn.Linear(5, 12), nn.LeakyReLU(0.2), nn.Linear(12, 1))
maker_opt = torch.optim.SGD(maker.parameters(), lr=0.05)
judge_opt = torch.optim.SGD(judge.parameters(), lr=0.05)
data = torch.randn(48, 5) + 1.0

for start in range(0, 48, 12):
    real = data[start:start + 12]
    fake = maker(torch.randn(12, 2))
    score = judge(fake)  # scores
    maker_loss = F.binary_cross_entropy_with_logits(score, torch.ones_like(score))
    judge_loss = F.binary_cross_entropy_with_logits(judge(real), torch.ones(12, 1)) + \
        F.binary_cross_entropy_with_logits(score, torch.zeros_like(score))  # judged
    maker_opt.zero_grad()
    maker_loss.backward()
    maker_opt.step()
    judge_opt.zero_grad()
    judge_loss.backward()  # fails
    judge_opt.step()
