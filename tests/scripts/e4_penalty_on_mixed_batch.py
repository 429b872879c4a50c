"""A critic step with a gradient penalty on points mixed from real and generated samples: the
penalty's function differentiates the critic at the mixed points, its backward runs first, and the
critic's loss on the generated batch then backwards through the generator's graph again. The
generated batch detached at the penalty's call would leave the mixed points without grad, so
that autograd.grad could not differentiate at them: no edit there."""
import torch
from torch import nn


def slope_penalty(critic, real, fake):
    t = torch.rand(real.size(0), 1)
    mixed = t * real + (1 - t) * fake
    (slope,) = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
    return ((slope.norm(dim=1) - 1) ** 2).mean()


torch.manual_seed(0)
gen = nn.Sequential(nn.Linear(2, 6), nn.ReLU(), nn.Linear(6, 3))
critic = nn.Sequential(nn.Linear(3, 6), nn.Softplus(), nn.Linear(6, 1))
opt_c = torch.optim.SGD(critic.parameters(), lr=0.05)
for step in range(3):
    real = torch.randn(8, 3)
    fake = gen(torch.randn(8, 2))
    penalty = slope_penalty(critic, real, fake)
    opt_c.zero_grad()
    penalty.backward()
    c_loss = critic(fake).mean() - critic(real).mean()  # enters: fake
    c_loss.backward()
    opt_c.step()
print("trained")
