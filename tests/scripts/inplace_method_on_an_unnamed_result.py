"""Scores for each block are written into one preallocated table: each block's log-softmax,
shifted in place by a prior, is copied into its columns. The shift writes the log-softmax's own
result, which its node saved; no name of the program holds that result."""
import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 3), nn.Linear(4, 5)])
        self.lsm = nn.LogSoftmax(dim=1)

    def forward(self, x, prior):
        table = x.new_zeros(x.size(0), 8)
        start = 0
        for block in self.blocks:
            width = block.out_features
            table[:, start:start + width] = self.lsm(block(x)).add_(prior)  # write
            start += width
        return table


torch.manual_seed(0)
model = Scorer()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, target = torch.randn(6, 4), torch.randint(0, 8, (6,))
    loss = -model(x, 0.5).gather(1, target[:, None]).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
