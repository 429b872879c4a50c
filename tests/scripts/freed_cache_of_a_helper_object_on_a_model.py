"""A model keeps a helper object of the program's own class (a prediction strategy) that caches
a solve the first time a prediction needs it, with the graph of the kernel's parameters; an
optimisation of the input then backpropagates through the cache in every step. The cache is
named where the helper's method stores it, though the program reaches it only through the
model (``model.strategy._solved``)."""
import torch
from torch import nn


class Strategy:
    def __init__(self, train_x, train_y, kernel):
        self.train_x, self.train_y, self.kernel = train_x, train_y, kernel
        self._solved = None

    def solved(self):
        if self._solved is None:
            gram = self.kernel(self.train_x, self.train_x) + 0.1 * torch.eye(len(self.train_x))
            self._solved = torch.linalg.solve(gram, self.train_y)  # cached
        return self._solved


class Model(nn.Module):
    def __init__(self, train_x, train_y):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(()))
        self.strategy = Strategy(train_x, train_y, self.kernel)

    def kernel(self, a, b):
        return torch.exp(-torch.cdist(a, b).pow(2) / self.log_scale.exp())

    def forward(self, x):
        return self.kernel(x, self.strategy.train_x) @ self.strategy.solved()


torch.manual_seed(0)
model = Model(torch.randn(6, 2), torch.randn(6))
x = torch.zeros(1, 2, requires_grad=True)
optimizer = torch.optim.SGD([x], lr=0.1)
for step in range(3):
    loss = -model(x).sum()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
