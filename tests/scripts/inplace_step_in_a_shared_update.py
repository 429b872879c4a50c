"""One helper runs every update (zero_grad, backward, step); the actor's loss is built before
the critic's update, which steps the critic weights that loss went through, and is handed to
the helper after it."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


def update(optimizer, loss):
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()  # step


class Agent:
    def __init__(self):
        self.actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
        self.critic = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
        self.actor_opt = torch.optim.SGD(self.actor.parameters(), lr=0.05)
        self.critic_opt = torch.optim.SGD(self.critic.parameters(), lr=0.05)

    def actor_loss(self, s):
        a = torch.tanh(self.actor(s))
        return -self.critic(torch.cat([s, a], 1)).mean()

    def critic_loss(self, s, a, r):
        return F.mse_loss(self.critic(torch.cat([s, a], 1)).squeeze(1), r)

    def learn(self, s, a, r):
        c_loss = self.critic_loss(s, a, r)
        a_loss = self.actor_loss(s)  # made
        update(self.critic_opt, c_loss)  # stepped
        update(self.actor_opt, a_loss)  # enters


agent = Agent()
for step in range(3):
    agent.learn(torch.randn(8, 4), torch.rand(8, 2) * 2 - 1, torch.randn(8))
print("TRAINED")
