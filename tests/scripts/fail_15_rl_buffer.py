"""Notebook 15: a policy's log-probabilities kept in a list that is never cleared."""
import torch
from torch import nn


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.policy = nn.Linear(2, 2)
        self.saved_log_probs = []

    def act(self, obs):
        log_p = self.policy(obs).log_softmax(-1)
        action = int(torch.argmax(log_p.detach()))
        self.saved_log_probs.append(log_p[action])
        return action


def reinforce_loss(agent):
    return -torch.stack(agent.saved_log_probs).sum()  # enters: agent.saved_log_probs[0]


torch.manual_seed(0)
agent = Agent()
for episode in range(2):
    for t in range(4):
        agent.act(torch.randn(2))
    agent.zero_grad()
    reinforce_loss(agent).backward()
