"""module_state: a running centre updated with history in forward."""
import torch
from torch import nn


class Centered(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.register_buffer("center", torch.zeros(3))

    def forward(self, x):
        out = self.proj(x)
        centered = out - self.center
        self.center = 0.9 * self.center + 0.1 * out.mean(0)
        return centered


torch.manual_seed(0)
model = Centered()
batches, target = torch.randn(3, 8, 4), torch.randn(8, 3)
for batch in batches:
    loss = (model(batch) - target).pow(2).mean()
    loss.backward()
