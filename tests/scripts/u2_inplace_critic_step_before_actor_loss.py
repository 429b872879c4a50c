"""A step between two backward calls: the actor's loss is built from the critic's output before
the critic's optimizer steps; its backward then meets the critic's weights, changed in place."""
import torch
from torch import nn

torch.manual_seed(0)
actor = nn.Linear(3, 2)
critic = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
actor_opt = torch.optim.SGD(actor.parameters(), lr=0.05)
critic_opt = torch.optim.SGD(critic.parameters(), lr=0.05)
for episode in range(4):
    state, reward = torch.randn(6, 3), torch.randn(6, 1)
    action = torch.tanh(actor(state))
    q = critic(torch.cat([state, action], dim=1))  # enters: q
    actor_loss = -q.mean()
    critic_loss = ((q - reward) ** 2).mean()
    critic_opt.zero_grad()
    critic_loss.backward(retain_graph=True)
    critic_opt.step()  # step: critic_opt
    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()
# page: 08_retain_step_backward
