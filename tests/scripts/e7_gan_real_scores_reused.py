"""A relativistic least-squares GAN: the critic's scores of the real batch, computed in the
critic's step, are used again in the generator's loss after the critic's backward and step.
Its fix: score the real batch again in the generator's step (detaching the generated batch in
the critic's step would not do: the critic's loss is already built from fake.detach())."""
import torch
from torch import nn

torch.manual_seed(0)
gen = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
critic = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
opt_gen = torch.optim.SGD(gen.parameters(), lr=0.05)
opt_critic = torch.optim.SGD(critic.parameters(), lr=0.05)
for step in range(3):
    real = torch.randn(16, 2) * 0.5 + 1.0
    fake = gen(torch.randn(16, 3))
    real_scores = critic(real)
    fake_scores = critic(fake.detach())
    critic_loss = ((real_scores - fake_scores.mean() - 1) ** 2).mean() + \
        ((fake_scores - real_scores.mean() + 1) ** 2).mean()
    opt_critic.zero_grad()
    critic_loss.backward()
    opt_critic.step()
    fake_scores = critic(fake)
    gen_loss = ((fake_scores - real_scores.mean() - 1) ** 2).mean()  # enters: real_scores
    opt_gen.zero_grad()
    gen_loss.backward()  # fails
    opt_gen.step()
print("TRAINED")
