"""A learned simulator rolled out over a few steps, each step's error backwarded at once to
save memory, and its prediction fed back as the next input: the second step's backward goes
through the first step's freed graph."""
import torch
from torch import nn

torch.manual_seed(0)
dynamics = nn.Sequential(nn.Linear(3, 12), nn.Tanh(), nn.Linear(12, 3))
opt = torch.optim.Adam(dynamics.parameters(), lr=0.01)


def train_rollout(start, truth):
    opt.zero_grad()
    current = start
    for t in range(truth.shape[0]):
        predicted = current + dynamics(current)  # made
        error = (predicted - truth[t]).pow(2).mean()
        error.backward()  # fails
        current = predicted  # kept
    opt.step()


for episode in range(2):
    start = torch.randn(8, 3)
    train_rollout(start, start + 0.1 * torch.randn(4, 8, 3).cumsum(0))
print("TRAINED")
