"""A kernel regressor fills two caches together in a property the first time a prediction
needs them (``self._alpha`` and ``self._precision``, guarded by ``if self._alpha is None:``),
from its learned length scale; an input is then optimised through the predictions. The second
step reads both caches, whose graph the first step's backward freed: each is stored without its
graph where the property makes it."""
import torch

torch.manual_seed(0)


class KernelRegressor(torch.nn.Module):
    def __init__(self, xs, ys):
        super().__init__()
        self.xs, self.ys = xs, ys
        self.log_scale = torch.nn.Parameter(torch.tensor(0.0))
        self._alpha = None
        self._precision = None

    def kernel(self, a, b):
        return torch.exp(-torch.cdist(a, b).pow(2) / self.log_scale.exp())

    @property
    def alpha(self):
        if self._alpha is None:
            gram = self.kernel(self.xs, self.xs) + 0.1 * torch.eye(len(self.xs))
            self._precision = torch.linalg.inv(gram)  # made
            self._alpha = self._precision @ self.ys  # made too
        return self._alpha

    def predict(self, x):
        k = self.kernel(x, self.xs)
        mean = k @ self.alpha
        spread = 1.0 - ((k @ self._precision) * k).sum(-1)
        return mean, spread


model = KernelRegressor(torch.randn(8, 2), torch.randn(8))
x = torch.nn.Parameter(torch.zeros(1, 2))
optimizer = torch.optim.SGD([x], lr=0.1)
for step in range(3):
    mean, spread = model.predict(x)
    loss = -(mean + spread).sum()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
