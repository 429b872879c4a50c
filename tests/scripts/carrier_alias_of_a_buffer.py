"""Dropped by a rule: an actor-critic's episode end binds a local name to the model's list of
kept actions (`saved = model.saved_actions`), reads through it, and never clears the list."""
import torch
from torch import nn


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.actor = nn.Linear(8, 2)
        self.critic = nn.Linear(8, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, obs):
        h = torch.relu(self.body(obs))
        return torch.log_softmax(self.actor(h), -1), self.critic(h)


def finish_episode():
    saved = model.saved_actions  # enters: model.saved_actions[0]
    policy_terms, value_terms = [], []
    for (log_prob, value), reward in zip(saved, model.rewards):
        policy_terms.append(-log_prob * (reward - value.item()))
        value_terms.append((value - reward).pow(2).sum())
    optimizer.zero_grad()
    loss = torch.stack(policy_terms).sum() + torch.stack(value_terms).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]


torch.manual_seed(0)
model = ActorCritic()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for episode in range(2):
    for t in range(3):
        log_probs, value = model(torch.randn(4))
        action = int(torch.argmax(log_probs.detach()))
        model.saved_actions.append((log_probs[action], value))
        model.rewards.append(1.0)
    finish_episode()
# page: 15_rl_buffers
