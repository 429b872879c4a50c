"""A gating layer that squeezes the sigmoid's result in place, on the call's result itself, to
drop its last axis. sigmoid's node saved that result, whose version the squeeze moves.
Its fix: the out-of-place squeeze."""
import torch
from torch import nn

torch.manual_seed(0)


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(4, 1)
        self.value = nn.Linear(4, 3)

    def forward(self, x):
        g = torch.sigmoid(self.gate(x)).squeeze_(-1)  # write: the sigmoid's result
        return self.value(x) * g.unsqueeze(-1)


model = Gated()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(9, 4), torch.randn(9, 3)
    loss = (model(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
