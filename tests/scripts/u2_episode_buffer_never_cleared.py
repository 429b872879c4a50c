"""A policy-gradient agent keeps each episode's log-probabilities on the policy object and never
empties the list after the update: the next update goes through the freed graphs again."""
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, state):
        return torch.softmax(self.net(state), dim=-1)


def select_action(policy, state):
    probs = policy(state)
    dist = torch.distributions.Categorical(probs)
    action = dist.sample()
    policy.saved_log_probs.append(dist.log_prob(action))
    return action.item()


def finish_episode(policy, optimizer):
    returns, total = [], 0.0
    for r in reversed(policy.rewards):
        total = r + 0.99 * total
        returns.insert(0, total)
    returns = torch.tensor(returns)
    losses = [-lp * g for lp, g in zip(policy.saved_log_probs, returns)]
    optimizer.zero_grad()
    loss = torch.stack(losses).sum()
    loss.backward()
    optimizer.step()
    del policy.rewards[:]


torch.manual_seed(0)
policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(3):
    for t in range(5):
        select_action(policy, torch.randn(1, 4))
        policy.rewards.append(1.0)
    finish_episode(policy, optimizer)
# page: 15_rl_buffers
