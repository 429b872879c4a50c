"""A layer caches two tensors computed from a weight on its first call and reuses them."""
import torch
from torch import nn

torch.manual_seed(0)


class Spectral(nn.Module):
    def __init__(self, d=4):
        super().__init__()
        self.basis = nn.Parameter(torch.randn(d, d) * 0.5)
        self.head = nn.Linear(d, 1)
        self._proj = None
        self._scale = None

    def forward(self, x):
        if self._proj is None:
            self._proj = torch.tanh(self.basis)
            self._scale = self._proj.pow(2).sum(0) + 1.0
        z = x @ self._proj / self._scale  # enters: self._proj
        return self.head(z)


model = Spectral()
opt = torch.optim.SGD(model.head.parameters(), lr=0.05)
x, y = torch.randn(8, 4), torch.randn(8, 1)
for step in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, model._scale.mean().item() > 0)
# page: 16_module_state_with_history
