"""An actor-critic update with twin critics: the actor's loss is built through both critics,
then each critic takes its step, and only then does the actor's loss go backward: the critics'
weights it saved have been changed by both steps."""
import torch
from torch import nn

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh())
critic_a = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
critic_b = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
opt_a = torch.optim.Adam(critic_a.parameters(), lr=1e-3)
opt_b = torch.optim.Adam(critic_b.parameters(), lr=1e-3)


def update(states, actions, returns):
    chosen = actor(states)
    both = torch.cat([states, chosen], 1)
    actor_loss = -torch.min(critic_a(both), critic_b(both)).mean()
    taken = torch.cat([states, actions], 1)
    loss_a = (critic_a(taken).squeeze(1) - returns).pow(2).mean()
    loss_b = (critic_b(taken).squeeze(1) - returns).pow(2).mean()
    opt_a.zero_grad()
    loss_a.backward()
    opt_a.step()  # write
    opt_b.zero_grad()
    loss_b.backward()
    opt_b.step()  # last
    actor_opt.zero_grad()
    actor_loss.backward()  # fails
    actor_opt.step()


for it in range(3):
    update(torch.randn(8, 4), torch.rand(8, 2) * 2 - 1, torch.randn(8))
print("TRAINED")
