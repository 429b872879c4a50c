"""An agent keeps its log-probabilities in a buffer object whose own method appends them
(``self.log_probs.append(log_prob)``, the buffer held as ``agent.memory``), and learns from the
whole buffer every few steps without emptying it: the second update goes back into the graphs
the first one freed. The list is named as the line that fills it writes it."""
import torch
from torch import nn


class Buffer:
    def __init__(self):
        self.log_probs, self.rewards = [], []

    def store(self, log_prob, reward):
        self.log_probs.append(log_prob)  # put
        self.rewards.append(reward)


class Agent:
    def __init__(self):
        self.policy = nn.Linear(3, 2)
        self.optimizer = torch.optim.SGD(self.policy.parameters(), lr=0.1)
        self.memory = Buffer()

    def act(self, state):
        dist = torch.distributions.Categorical(logits=self.policy(state))
        action = dist.sample()
        return action.item(), dist.log_prob(action)

    def learn(self):
        returns = torch.tensor(self.memory.rewards)
        loss = -(torch.stack(self.memory.log_probs) * returns).mean()
        self.optimizer.zero_grad()
        loss.backward()  # fails
        self.optimizer.step()


torch.manual_seed(0)
agent = Agent()
for step in range(8):
    action, log_prob = agent.act(torch.randn(3))
    agent.memory.store(log_prob, float(action))
    if step % 4 == 3:
        agent.learn()
print("TRAINED")
