"""A generator's batch is made once per round; the critic steps four times on it, then the
generator steps on its own loss. The critic's second backward goes into the generator's graph,
which its first freed. The generator gets its gradient from its own loss, after the critic's
four calls."""
import torch

torch.manual_seed(0)
gen = torch.nn.Linear(2, 2)
critic = torch.nn.Linear(2, 1)
opt_g = torch.optim.SGD(gen.parameters(), lr=0.01)
opt_c = torch.optim.SGD(critic.parameters(), lr=0.01)
noise, real = torch.randn(8, 2), torch.randn(8, 2)
for round_ in range(3):
    fake = gen(noise)
    for inner in range(4):
        opt_c.zero_grad()
        critic_loss = critic(fake).mean() - critic(real).mean()
        critic_loss.backward()
        opt_c.step()
    opt_g.zero_grad()
    gen_loss = -critic(fake).mean()
    gen_loss.backward()
    opt_g.step()
