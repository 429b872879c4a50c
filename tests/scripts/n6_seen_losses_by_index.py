"""A classifier that weights each sample by the loss it had the epoch before, kept by sample
index in a dict of its own; the entries a batch reads are replaced by that batch's losses."""
import torch
from torch import nn
from torch.nn import functional as F


class Reweighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(5, 2)
        self.seen = {}

    def forward(self, x, y, idx):
        per = F.cross_entropy(self.net(x), y, reduction="none")
        prev = torch.stack([self.seen.get(i, per.new_ones(())) for i in idx.tolist()])  # enters: self.seen
        for i, value in zip(idx.tolist(), per):
            self.seen[i] = value
        return (torch.softmax(prev, 0) * per).sum()


def epoch(model, opt, xs, ys):
    for start in range(0, 12, 4):
        idx = torch.arange(start, start + 4)
        loss = model(xs[idx], ys[idx], idx)
        opt.zero_grad()
        loss.backward()
        opt.step()


torch.manual_seed(0)
model = Reweighted()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xs, ys = torch.randn(12, 5), torch.randint(2, (12,))
for _ in range(2):
    epoch(model, opt, xs, ys)
print("TRAINED")
