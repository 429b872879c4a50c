"""A policy-gradient agent keeps its episode's log-probabilities and rewards in lists on the
agent object, a module-level global; the update reads both but empties neither (it empties two
other lists, left from an older version of the script), so the next episode's loss reaches
back into the first episode's freed graph."""
import torch
from torch import nn
from torch.distributions import Categorical

torch.manual_seed(0)


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 2))
        self.log_probs, self.rewards, self.values, self.entropies = [], [], [], []


agent = Agent()
optimizer = torch.optim.SGD(agent.parameters(), lr=0.05)


def act(state):
    dist = Categorical(logits=agent.net(state))
    action = dist.sample()
    agent.log_probs.append(dist.log_prob(action))  # gathered
    return action.item()


def update():
    returns = torch.tensor(agent.rewards).flip(0).cumsum(0).flip(0)
    loss = -(torch.stack(agent.log_probs) * returns).sum()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
    del agent.values[:]
    del agent.entropies[:]


for episode in range(3):
    for t in range(5):
        state = torch.randn(3)
        agent.rewards.append(float(act(state) == int(state[0] > 0)))
    update()
print("TRAINED")
