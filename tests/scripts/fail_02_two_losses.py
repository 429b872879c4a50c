"""Notebook 02: two losses over one forward, two backward calls."""
import torch
import torch.nn.functional as F
from torch import nn


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
        self.head_reg = nn.Linear(8, 1)
        self.head_cls = nn.Linear(8, 3)

    def forward(self, x):
        h = self.trunk(x)
        return self.head_reg(h), self.head_cls(h)


torch.manual_seed(0)
model = TwoHeads()
X, y_reg, y_cls = torch.randn(16, 4), torch.randn(16, 1), torch.randint(0, 3, (16,))
out_reg, out_cls = model(X)
loss_reg, loss_cls = F.mse_loss(out_reg, y_reg), F.cross_entropy(out_cls, y_cls)
loss_reg.backward()
loss_cls.backward()  # enters: loss_cls
