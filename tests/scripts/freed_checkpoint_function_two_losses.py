"""A memory-saving block written as a custom Function: its forward keeps the block's own graph
on ctx and its backward runs that graph by hand. The model's two heads are backwarded in turn,
the first with retain_graph=True: the outer graph is kept, but the block's inner graph is freed
by the Function's backward in the first call, and the second call fails inside it."""
import torch
from torch import nn

torch.manual_seed(0)


class Recomputed(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, layer):
        with torch.enable_grad():
            inner_in = x.detach().requires_grad_()
            inner_out = layer(inner_in)
        ctx.inner_in, ctx.inner_out = inner_in, inner_out
        return inner_out.detach()

    @staticmethod
    def backward(ctx, grad):
        torch.autograd.backward(ctx.inner_out, grad)  # frees
        return ctx.inner_in.grad, None


stem, layer = nn.Linear(5, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh())
left, right = nn.Linear(8, 2), nn.Linear(8, 1)
params = [*stem.parameters(), *layer.parameters(), *left.parameters(), *right.parameters()]
opt = torch.optim.SGD(params, lr=0.1)
x, label, size = torch.randn(10, 5), torch.randint(0, 2, (10,)), torch.randn(10, 1)
for step in range(3):
    h = stem(x)
    h = h + Recomputed.apply(h, layer)
    first = nn.functional.cross_entropy(left(h), label)
    second = (right(h) - size).pow(2).mean()
    opt.zero_grad()
    first.backward(retain_graph=True)
    second.backward()  # fails
    opt.step()
print("TRAINED")
