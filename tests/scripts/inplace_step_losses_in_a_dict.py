"""A model whose forward returns its losses in a dict: the critic's loss is backwarded and the
critic steps, then the generator's loss is read from the same dict, built before that step."""
import torch
from torch import nn

torch.manual_seed(0)


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
        self.critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, noise, real):
        fake = self.gen(noise)
        return {"critic": self.critic(fake.detach()).mean() - self.critic(real).mean(),
                "adv": -self.critic(fake).mean(), "size": fake.pow(2).mean()}


pair = Pair()
opt_g = torch.optim.SGD(pair.gen.parameters(), lr=0.01)
opt_c = torch.optim.SGD(pair.critic.parameters(), lr=0.01)
for it in range(3):
    losses = pair(torch.randn(6, 4), torch.randn(6, 4))  # made
    opt_c.zero_grad()
    losses["critic"].backward()
    opt_c.step()  # step
    opt_g.zero_grad()
    g_loss = losses["adv"] + 0.1 * losses["size"]
    g_loss.backward()  # fails
    opt_g.step()
print("TRAINED")
