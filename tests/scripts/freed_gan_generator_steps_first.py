"""A GAN round trains the generator several times, then the critic once on the last generated
batch. The critic's score of that batch is taken without a detach, so the critic's backward
goes back into the generator's graph, which the last generator step's backward already freed."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)

gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
critic = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.1), nn.Linear(16, 1))
gen_opt = torch.optim.Adam(gen.parameters(), lr=1e-3)
critic_opt = torch.optim.SGD(critic.parameters(), lr=0.02)
real_data = torch.randn(64, 8)


def train_round(real, gen_steps=2):
    for _ in range(gen_steps):
        fake = gen(torch.randn(real.shape[0], 4))  # made
        gen_loss = F.softplus(-critic(fake)).mean()
        gen_opt.zero_grad()
        gen_loss.backward()
        gen_opt.step()
    critic_loss = F.softplus(-critic(real)).mean() + F.softplus(critic(fake)).mean()  # scores
    critic_opt.zero_grad()
    critic_loss.backward()  # fails
    critic_opt.step()


for start in range(0, 64, 16):
    train_round(real_data[start:start + 16])
print("TRAINED")
