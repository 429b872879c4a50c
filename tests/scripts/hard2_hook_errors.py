"""Errors of the program's own raised inside backward: a hook's KeyError (printed by the
program), then a custom Function's ValueError (uncaught: Python prints it at exit)."""
import traceback

import torch

w = torch.ones(3, requires_grad=True)
y = w * 2
y.register_hook(lambda grad: {}["missing"])
try:
    y.sum().backward()
except KeyError:
    traceback.print_exc()


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("the custom backward refuses")


Doubled.apply(w).sum().backward()
