"""A learned step size: the weights are stepped by hand with autograd.grad, the step size trained
through the stepped weights' loss; the stepped list becomes the next step's weights."""
import torch

torch.manual_seed(0)
weights = [torch.randn(3, 2, requires_grad=True), torch.zeros(2, requires_grad=True)]
log_step = torch.tensor(-2.0, requires_grad=True)
opt = torch.optim.Adam([log_step], lr=0.05)


def fit(ws, x, y):
    return ((x @ ws[0] + ws[1] - y) ** 2).mean()


for it in range(3):
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    grads = torch.autograd.grad(fit(weights, x, y), weights, create_graph=True)
    stepped = [w - log_step.exp() * g for w, g in zip(weights, grads)]
    outer = fit(stepped, torch.randn(5, 3), torch.randn(5, 2))
    opt.zero_grad()
    outer.backward()
    opt.step()
    weights = stepped
print("TRAINED")
