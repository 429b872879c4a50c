"""A training step that hands its loss around in a dict: one backward of the loss scaled for
accumulation, then a wrapper takes the same entry under another name and calls backward again.
Copying that renaming before the second backward would build no new graph."""
import torch
from torch import nn


def train_step(model, opt, x, y):
    result = {'objective': ((model(x) - y) ** 2).mean()}
    scaled = result['objective'] / 2
    scaled.backward()
    final = result['objective']
    final.backward()  # enters: result["objective"]
    opt.step()
    opt.zero_grad()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
pairs = [(torch.randn(5, 4), torch.randn(5, 1)) for _ in range(3)]
for x, y in pairs:
    train_step(model, opt, x, y)
print("trained")
