"""An actor-critic loop where the critic is fitted at every step by a method that runs its own
backward, and the actor's per-step terms, gathered for one update per episode, take in the
critic's value (as gap = ret - baseline): the critic's backward has freed that graph by the
time the actor's loss goes backward."""
import torch
from torch import nn

torch.manual_seed(0)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        self.opt = torch.optim.SGD(self.parameters(), lr=0.05)

    def forward(self, s):
        return self.fc(s)

    def fit(self, pred, target):
        loss = (pred - target).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


actor = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
actor_opt = torch.optim.SGD(actor.parameters(), lr=0.05)
critic = Critic()
for episode in range(3):
    terms = []
    for t in range(4):
        s, ret = torch.randn(3), torch.randn(1)
        logp = torch.log_softmax(actor(s), -1)[0]
        baseline = critic(s)
        critic.fit(baseline, ret)
        gap = ret - baseline
        terms.append(-logp * gap)  # made
    loss = torch.stack(terms).sum()
    actor_opt.zero_grad()
    loss.backward()  # fails
    actor_opt.step()
print("TRAINED")
