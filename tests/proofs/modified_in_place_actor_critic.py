"""modified_in_place: the actor's loss is built from the critic's output before the critic's
step; its backward meets the critic's weights, changed in place by the step."""
import torch
from torch import nn

torch.manual_seed(0)
actor = nn.Linear(3, 2)
critic = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
critic_opt = torch.optim.SGD(critic.parameters(), lr=0.05)
state, reward = torch.randn(6, 3), torch.randn(6, 1)
action = torch.tanh(actor(state))
q = critic(torch.cat([state, action], dim=1))
actor_loss = -q.mean()
critic_loss = ((q - reward) ** 2).mean()
critic_loss.backward(retain_graph=True)
critic_opt.step()
actor.zero_grad()
actor_loss.backward()
