"""In place, in a forward that has returned: `s /= 3.0` writes into the output that exp saved."""
import torch
from torch import nn

torch.manual_seed(0)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        s = torch.exp(self.lin(x))
        s /= 3.0  # write: s
        return s.sum(1)


model = Scorer()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
xs, ys = torch.randn(6, 4), torch.rand(6)
done = 0
for epoch in range(3):
    loss = ((model(xs) - ys) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    done += 1
# page: mental_model
