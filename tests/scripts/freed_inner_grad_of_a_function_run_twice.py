"""A custom Function runs its computation under enable_grad in forward, keeps the result, and in
backward takes the gradient with autograd.grad. The step backpropagates two losses of its output
in turn, keeping the outer graph; the second pass runs the Function's backward again, and its
autograd.grad meets the graph that the first pass's call freed."""
import torch
from torch import nn


class Smooth(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        with torch.enable_grad():
            x_, w_ = x.detach().requires_grad_(), weight.detach().requires_grad_()
            out = torch.tanh(x_ @ w_)
        ctx.save_for_backward(out, x_, w_)
        return out.detach()

    @staticmethod
    def backward(ctx, grad):
        out, x_, w_ = ctx.saved_tensors
        return torch.autograd.grad(out, (x_, w_), grad)  # inner


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 5)
        self.weight = nn.Parameter(torch.randn(5, 5) * 0.3)
        self.head = nn.Linear(5, 2)

    def forward(self, x):
        z = Smooth.apply(self.inp(x), self.weight)
        return self.head(z), z


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 3)
    pred, z = model(x)
    opt.zero_grad()
    pred.pow(2).mean().backward(retain_graph=True)
    z.abs().mean().backward()  # fails
    opt.step()
print("TRAINED")
