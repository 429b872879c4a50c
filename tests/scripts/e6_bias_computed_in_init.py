"""A bias vector computed once from parameters in the module's constructor and read by every
forward: detached, what computes it would never train, so no detach is the fix."""
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.codes = nn.Embedding(3, 4)
        self.mix = nn.Linear(4, 4)
        self.bias = self.mix(self.codes(torch.arange(3))).mean(0)
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(x) + self.bias


torch.manual_seed(0)
tagger = Tagger()
opt = torch.optim.SGD(tagger.parameters(), lr=0.1)
for step in range(3):
    loss = tagger(torch.randn(5, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
