"""Targets made once, up front, from a weight that requires grad, then handed to a small
loader object that serves batches of them (``self.Y[j]``): each batch's loss goes back into
the one graph that made them."""
import torch

torch.manual_seed(0)


class Loader:
    def __init__(self, X, Y):
        self.X, self.Y = X, Y

    def __iter__(self):
        for j in torch.arange(len(self.X)).split(10):
            yield self.X[j], self.Y[j]  # enters


X = torch.randn(30, 2)
true_w = torch.randn(2, 1, requires_grad=True)
Y = X @ true_w  # made
loader = Loader(X, Y)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = ((model(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
