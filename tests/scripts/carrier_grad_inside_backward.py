"""Not traced: a custom Function's backward calls autograd.grad on a graph it built in forward
(without retain_graph); a second backward through the Function's node runs it again."""
import torch


class Smoothed(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.enable_grad():
            inner = x.detach().requires_grad_(True)
            out = torch.nn.functional.softplus(inner * 3) / 3
        ctx.save_for_backward(inner, out)
        return out.detach()

    @staticmethod
    def backward(ctx, grad_out):
        inner, out = ctx.saved_tensors
        (grad_in,) = torch.autograd.grad(out, inner, grad_out)
        return grad_in


torch.manual_seed(0)
w = torch.randn(5, requires_grad=True)
act = Smoothed.apply(w * 2)
loss_a = act.sum()
loss_b = act.pow(2).mean()
loss_a.backward(retain_graph=True)
loss_b.backward()  # enters: act
# page: 17_custom_function
