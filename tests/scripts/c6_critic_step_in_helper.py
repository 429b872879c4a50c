"""A painter network and a judge: the painter's step first, then a helper runs the judge's loss
and its backward on the painted batch, which still carries the painter's graph."""
import torch
from torch import nn

torch.manual_seed(0)
painter = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
judge = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
opt_p = torch.optim.SGD(painter.parameters(), lr=0.05)
opt_j = torch.optim.SGD(judge.parameters(), lr=0.05)
bce = nn.BCEWithLogitsLoss()


def judge_update(net, real, painted):
    verdict = bce(net(real), torch.ones(len(real), 1)) + bce(net(painted), torch.zeros(len(painted), 1))
    verdict.backward()
    return verdict


for step in range(3):
    noise, real = torch.randn(16, 3), torch.randn(16, 2) + 1.0
    painted = painter(noise)
    for p in judge.parameters():
        p.requires_grad_(False)
    opt_p.zero_grad()
    fool = bce(judge(painted), torch.ones(16, 1))
    fool.backward()
    opt_p.step()
    for p in judge.parameters():
        p.requires_grad_(True)
    opt_j.zero_grad()
    judge_update(judge, real, painted)  # carrier: painted
    opt_j.step()
