"""Custom autograd Functions shared by the library's unit tests."""

import torch


class Square(torch.autograd.Function):
    """x * x, saving x with save_for_backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad
