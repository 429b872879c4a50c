"""A model fitted by hand (w -= lr * w.grad under no_grad) to targets made once, up front, from
a reference weight that was created with requires_grad=True: the targets carry that graph, and
the second batch's backward goes through it again."""
import torch

torch.manual_seed(0)
inputs = torch.randn(60, 3)
reference = torch.randn(3, 1, requires_grad=True)
targets = torch.tanh(inputs @ reference)  # made
w = torch.zeros(3, 1, requires_grad=True)
for epoch in range(2):
    for start in range(0, 60, 20):
        x, t = inputs[start:start + 20], targets[start:start + 20]
        loss = ((torch.tanh(x @ w) - t) ** 2).mean()
        loss.backward()  # fails
        with torch.no_grad():
            w -= 0.5 * w.grad
            w.grad.zero_()
print("TRAINED")
