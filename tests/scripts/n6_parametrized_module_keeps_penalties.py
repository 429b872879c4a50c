"""A layer whose own weight goes through a parametrization (kept symmetric) and which keeps, in
a list of its own, a penalty per forward; the loop adds the penalties the layer kept."""
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrize


class Symmetric(nn.Module):
    def forward(self, w):
        return (w + w.t()) / 2


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim) / dim)
        self.penalties = []

    def forward(self, x):
        h = torch.tanh(x @ self.weight)
        self.penalties.append(h.pow(2).mean())
        return h


torch.manual_seed(0)
model = Mixer(4)
parametrize.register_parametrization(model, "weight", Symmetric())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 4), torch.randn(8, 4)
    loss = F.mse_loss(model(x), y) + 0.1 * sum(model.penalties)  # enters: model.penalties[0]
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
