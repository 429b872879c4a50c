"""Second-order adaptation of a linear regressor: the weights take one inner gradient step
(create_graph=True) on a support set, and the adapted weights are then scored on two query
sets with a backward each; the first backward frees the inner step's graph."""
import torch

torch.manual_seed(0)
theta = torch.zeros(4, 1, requires_grad=True)
outer = torch.optim.SGD([theta], lr=0.1)


def regression_task():
    slope = torch.randn(4, 1)
    def sample():
        x = torch.randn(6, 4)
        return x, x @ slope
    return sample


for episode in range(3):
    outer.zero_grad()
    sample = regression_task()
    xs, ys = sample()
    support = (xs @ theta - ys).pow(2).mean()
    (step,) = torch.autograd.grad(support, theta, create_graph=True)
    adapted = theta - 0.2 * step
    for xq, yq in (sample(), sample()):
        query = (xq @ adapted - yq).pow(2).mean()  # enters: adapted
        query.backward()
    outer.step()
print("adapted")
