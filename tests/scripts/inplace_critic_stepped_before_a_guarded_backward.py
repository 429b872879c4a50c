"""(The generator's backward under a guard, `if generator_loss is not None:`.) A small GAN whose two losses are built in one method (the critic's on a detached sample, the
generator's through the critic) and backpropagated in another, the critic stepped between the
two backward calls: the generator's backward needs the critic's weights as the forward saw them,
and the step has changed them in place. Another optimizer (the generator's) steps after it."""
import torch
from torch import nn
from torch.nn.functional import softplus


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6))
        self.critic = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
        self.g_opt = torch.optim.SGD(self.generator.parameters(), lr=0.05)
        self.c_opt = torch.optim.SGD(self.critic.parameters(), lr=0.05)

    def losses(self, real, noise):
        self.g_opt.zero_grad()
        self.c_opt.zero_grad()
        fake = self.generator(noise)
        critic_loss = softplus(self.critic(fake.detach())).mean() + \
            softplus(-self.critic(real)).mean()
        generator_loss = softplus(-self.critic(fake)).mean()
        return critic_loss, generator_loss

    def update(self, critic_loss, generator_loss=None):
        critic_loss.backward()
        self.c_opt.step()  # step
        if generator_loss is not None:  # guard
            generator_loss.backward()  # fails
        self.g_opt.step()


torch.manual_seed(0)
pair = Pair()
for step in range(3):
    real, noise = torch.randn(16, 6), torch.randn(16, 4)
    critic_loss, generator_loss = pair.losses(real, noise)
    pair.update(critic_loss, generator_loss)
print("TRAINED")
