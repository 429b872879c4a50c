"""create_graph=True on autograd.grad keeps the graph, but the penalty's own backward then frees
it: the critic's scores, read again for the loss, carry the freed graph."""
import torch
from torch import nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.SGD(critic.parameters(), lr=0.01)
for step in range(3):
    mixed = torch.randn(8, 2, requires_grad=True)
    scores = critic(mixed)
    (slope,) = torch.autograd.grad(scores.sum(), mixed, create_graph=True)
    penalty = ((slope.norm(dim=1) - 1) ** 2).mean()
    opt.zero_grad()
    penalty.backward()
    loss = scores.mean()  # enters: scores
    loss.backward()
    opt.step()
