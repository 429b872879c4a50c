"""Reward-weighted regression: each sample's weight is its reward minus a learned baseline,
computed once before the epochs; the epochs train the policy only, but the weights still carry
the baseline network's graph."""
import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
baseline_net = nn.Linear(3, 1)
opt = torch.optim.SGD(policy.parameters(), lr=0.05)
states, choices = torch.randn(12, 3), torch.randint(0, 2, (12,))
rewards = torch.rand(12)
baseline = baseline_net(states).squeeze(1)
weights = rewards - baseline
for epoch in range(3):
    logp = torch.log_softmax(policy(states), 1)[torch.arange(12), choices]
    loss = -(weights * logp).mean()  # enters: weights
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained")
