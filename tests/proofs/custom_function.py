"""custom_function: backward twice through a custom autograd.Function."""
import torch


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, s = ctx.saved_tensors
        return grad_out * (s + x * s * (1 - s))


torch.manual_seed(0)
x = torch.randn(5, requires_grad=True)
loss = Swish.apply(x).sum()
loss.backward()
loss.backward()
