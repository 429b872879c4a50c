"""A temperature exponentiated once in __init__ from its learned logarithm, then used by every forward."""
import torch
from torch import nn


class Calibrated(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_temperature = nn.Parameter(torch.zeros(()))
        self.temperature = self.log_temperature.exp()
        self.logits = nn.Linear(4, 3)

    def forward(self, x):
        return self.logits(x) / self.temperature


torch.manual_seed(6)
model = Calibrated()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
for step in range(3):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()  # page: 13_tensor_outside_loop
    opt.step()
