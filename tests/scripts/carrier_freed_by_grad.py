"""Not traced: a gradient penalty takes autograd.grad of the critic's output without
retain_graph, which frees the critic's graph; the loss then adds the same output."""
import torch
from torch import nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
real, fake = torch.randn(8, 2), torch.randn(8, 2)
alpha = torch.rand(8, 1)
mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
scores = critic(mixed)
(slope,) = torch.autograd.grad(scores.sum(), mixed)
penalty = ((slope.norm(dim=1) - 1) ** 2).mean()
loss = scores.mean() + 10 * penalty  # enters: scores
loss.backward()
# page: 11_higher_order_gradients
