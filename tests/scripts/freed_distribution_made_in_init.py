"""A Gaussian policy builds its action distribution once, in __init__, from its own mean and
log-scale parameters, and the training loop scores sampled actions with it: the distribution
caches nothing the program assigns, yet its mean and scale tensors hold the first step's
graph, which the first backward frees. At the failure the program holds that graph only
through ``policy.dist``."""
import torch
from torch import nn
from torch.distributions import Normal


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Parameter(torch.zeros(2))
        self.log_sigma = nn.Parameter(torch.zeros(2))
        self.dist = Normal(self.mu, self.log_sigma.exp())  # made

    def act(self):
        with torch.no_grad():
            return self.dist.sample()


torch.manual_seed(0)
policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=0.05)
target = torch.tensor([1.0, -1.0])
for step in range(3):
    action = policy.act()
    reward = -((action - target) ** 2).sum()
    loss = -reward * policy.dist.log_prob(action).sum()  # read
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
