"""meta_learning: an inner step without create_graph, an outer loss that reuses the inner loss."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
params = dict(model.named_parameters())
support = (torch.randn(10, 3), torch.randn(10, 1))
query = (torch.randn(10, 3), torch.randn(10, 1))


def task_loss(weights, data):
    x, y = data
    return ((torch.func.functional_call(model, weights, (x,)) - y) ** 2).mean()


inner = task_loss(params, support)
grads = torch.autograd.grad(inner, list(params.values()))
adapted = {k: w - 0.1 * g for (k, w), g in zip(params.items(), grads)}
outer = task_loss(adapted, query) + 0.1 * inner
outer.backward()
