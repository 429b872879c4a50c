"""In place, a buffer filled column by column: `outs[:, t] = ...` after a product saved a slice."""
import torch
from torch import nn

torch.manual_seed(0)


class Unroll(nn.Module):
    def __init__(self, d=4, steps=5):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d) * 0.3)
        self.steps = steps

    def forward(self, x):
        outs = torch.zeros(x.shape[0], self.steps, x.shape[1])
        outs[:, 0] = x
        for t in range(1, self.steps):
            outs[:, t] = torch.tanh(outs[:, t - 1] @ self.w)  # write: outs
        return outs


model = Unroll()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(3, 4)
for epoch in range(3):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: mental_model
