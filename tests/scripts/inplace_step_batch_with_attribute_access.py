"""A soft actor-critic update over a batch that is a dict read by attribute (a ``__getattr__``
that raises KeyError for a missing key): the actor's loss is built through the critic, the
critic takes its step, then the actor's loss goes backward; the target critic follows by a
soft update of its weights' .data. The targets are clipped in place while the batch is a local."""
import copy

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Batch(dict):
    __getattr__ = dict.__getitem__


class Learner:
    def __init__(self):
        self.actor = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
        self.critic = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
        self.critic_old = copy.deepcopy(self.critic)
        self.actor_optim = torch.optim.Adam(self.actor.parameters(), lr=1e-2)
        self.critic_optim = torch.optim.Adam(self.critic.parameters(), lr=1e-2)

    def sync_weight(self, tau=0.05):
        for p_o, p_n in zip(self.critic_old.parameters(), self.critic.parameters()):
            p_o.data.copy_(p_o.data * (1 - tau) + p_n.data * tau)

    def learn(self, batch):
        with torch.no_grad():
            target_q = batch.rew + 0.9 * self.critic_old(torch.cat([batch.obs, batch.act], 1))
            target_q.clamp_(-10.0, 10.0)
        a = torch.tanh(self.actor(batch.obs))
        current_q = self.critic(torch.cat([batch.obs, batch.act], 1))
        current_qa = self.critic(torch.cat([batch.obs, a], 1))
        actor_loss = -current_qa.mean()
        critic_loss = F.mse_loss(current_q, target_q)
        self.critic_optim.zero_grad()
        critic_loss.backward()
        self.critic_optim.step()  # step
        self.actor_optim.zero_grad()
        actor_loss.backward()  # fails
        self.actor_optim.step()
        self.sync_weight()


learner = Learner()
for it in range(3):
    learner.learn(Batch(obs=torch.randn(8, 3), act=torch.rand(8, 2), rew=torch.randn(8, 1)))
print("TRAINED")
