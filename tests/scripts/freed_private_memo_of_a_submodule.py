"""A submodule memoises a factor in a private dict (``self._memo[key]``), refilled only while
training (``if key not in self._memo or self.training:``); the model runs in eval mode while an
input is optimised through it, so the second step reads the memo whose graph the first step's
backward freed. The recording looks into a submodule's private dict; the guard fills the entry
again whenever a graph is recorded."""
import torch

torch.manual_seed(0)


class Factor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(3))
        self._memo = {}

    def forward(self, x):
        key = "factor"
        if key not in self._memo or self.training:
            self._memo[key] = torch.diag(self.scale.exp())  # made
        return x @ self._memo[key]


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.factor = Factor()

    def forward(self, x):
        return self.factor(x).sum()


model = Model()
model.eval()
x = torch.nn.Parameter(torch.randn(2, 3))
optimizer = torch.optim.SGD([x], lr=0.1)
for step in range(3):
    loss = model(x).pow(2)
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
