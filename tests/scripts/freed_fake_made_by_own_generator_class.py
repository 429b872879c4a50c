"""A GAN whose generator is the program's own class: the critic's backward on the undetached
fake batch goes through the generator and frees its graph before the generator's loss."""
import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.lift = nn.Linear(3, 5)

    def forward(self, z):
        lifted = self.lift(z)
        return torch.sigmoid(lifted)


torch.manual_seed(0)
gen, critic = Generator(), nn.Linear(5, 1)
opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
opt_c = torch.optim.SGD(critic.parameters(), lr=0.1)
for step in range(2):
    z = torch.randn(4, 3)
    fake = gen(z)  # got
    critic_loss = critic(fake).mean()  # edit
    opt_c.zero_grad()
    critic_loss.backward()
    opt_c.step()
    gen_loss = -critic(fake).mean()  # read
    opt_g.zero_grad()
    gen_loss.backward()
    opt_g.step()
