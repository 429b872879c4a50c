"""Two loss terms, each of its own forward, weighed by the norms of their gradients: a helper takes each term's gradient
with respect to the weights (no create_graph: the norms are constants), and returns their sum
weighed by them; the step backpropagates that sum through the graphs the two gradient calls
freed. No weight is stepped by those gradients."""
import torch
from torch import nn


def balanced(fit, smooth, model):
    fit_grads = torch.autograd.grad(fit, list(model.parameters()))  # first
    smooth_grads = torch.autograd.grad(smooth, list(model.parameters()))  # second
    fit_norm = torch.sqrt(sum((g ** 2).sum() for g in fit_grads))
    smooth_norm = torch.sqrt(sum((g ** 2).sum() for g in smooth_grads))
    return fit + (fit_norm / (smooth_norm + 1e-8)) * smooth


torch.manual_seed(0)
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 3), torch.randn(8, 2)
    loss = balanced((model(x) - y).pow(2).mean(), model(x).diff(dim=0).pow(2).mean(), model)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
