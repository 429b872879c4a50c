"""A weight decay learned through one unrolled step: each step takes a differentiable step of the
weights, scores the stepped weights on held-out data, and the stepped weights become the next
step's weights without leaving the unrolled graph."""
import torch

torch.manual_seed(0)
true_w = torch.randn(4, 1)
weights = (0.1 * torch.randn(4, 1)).requires_grad_()
log_decay = torch.tensor(-3.0, requires_grad=True)
outer = torch.optim.SGD([log_decay], lr=0.1)
for step in range(3):
    x, x_held = torch.randn(16, 4), torch.randn(16, 4)
    inner = torch.sigmoid(x @ weights - x @ true_w).pow(2).mean() \
        + log_decay.exp() * weights.pow(2).sum()  # carrier: weights
    (g,) = torch.autograd.grad(inner, weights, create_graph=True)
    stepped = weights - 0.5 * g
    held = torch.sigmoid(x_held @ stepped - x_held @ true_w).pow(2).mean()
    outer.zero_grad()
    held.backward()
    outer.step()
    weights = stepped
