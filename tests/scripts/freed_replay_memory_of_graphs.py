"""A critic that keeps each transition's value prediction in a replay memory through a method
of its own, then learns from a random sample of it: a sampled entry still holds the graph that
an earlier update's backward freed."""
import random

import torch
from torch import nn

torch.manual_seed(0)
random.seed(0)


class Critic:
    def __init__(self):
        self.net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.05)
        self.memory = []

    def keep(self, value, reward):
        self.memory.append((value, reward))  # put

    def update(self):
        sample = random.sample(self.memory, 3)
        loss = sum((value - reward).pow(2).sum() for value, reward in sample) / 3
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


critic = Critic()
for t in range(8):
    state = torch.randn(3)
    critic.keep(critic.net(state), float(t % 2))
    if len(critic.memory) >= 3:
        critic.update()
print("TRAINED")
