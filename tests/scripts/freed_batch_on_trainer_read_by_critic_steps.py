"""A trainer keeps the generated batch as an attribute; its critic step runs three times per
round, with a penalty that reads the batch, then its generator step trains through the batch.
The critic's second backward goes into the generator's graph that its first freed."""
import torch

torch.manual_seed(0)


def penalty(critic, batch):
    return critic(batch).pow(2).mean()


class Trainer:
    def __init__(self):
        self.gen = torch.nn.Linear(3, 3)
        self.critic = torch.nn.Linear(3, 1)
        self.opt_g = torch.optim.SGD(self.gen.parameters(), lr=0.01)
        self.opt_c = torch.optim.SGD(self.critic.parameters(), lr=0.01)

    def critic_step(self, real):
        self.opt_c.zero_grad()
        loss = self.critic(real).mean() + penalty(self.critic, self.made)
        loss.backward()
        self.opt_c.step()

    def gen_step(self):
        self.opt_g.zero_grad()
        (-self.critic(self.made).mean()).backward()
        self.opt_g.step()

    def round(self, noise, real):
        self.made = self.gen(noise)
        for _ in range(3):
            self.critic_step(real)
        self.gen_step()


trainer = Trainer()
for _ in range(2):
    trainer.round(torch.randn(6, 3), torch.randn(6, 3))
