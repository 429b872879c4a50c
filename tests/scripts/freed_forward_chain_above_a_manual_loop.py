"""A forward pass written once, above the loop, in three statements; the loop runs backward and
a hand-written update again and again on the loss they made."""
import torch

torch.manual_seed(0)
x, y = torch.randn(10, 3), torch.randn(10, 1)
w = torch.randn(3, 1, requires_grad=True)
pred = x @ w
err = pred - y
loss = err.pow(2).mean()  # made
for k in range(4):
    w.grad = None  # top
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
print("TRAINED")
