"""A residual unit after a block keeps its input as ``identity = x`` and runs an in-place ReLU
on it: the tensor written is the block's output, which the block's own in-place ReLU node saved. The write
is named as its own statement names the tensor (``identity``), not by the other name that
holds it (``x``)."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.fc(x)
        x = self.act(x)
        return x


class Unit(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)  # made

    def forward(self, x):
        if x.shape[0] > 100:
            identity = x.clone()
        else:
            identity = x
        identity = self.act(identity)  # write
        return self.out(x) + identity


torch.manual_seed(0)
model = nn.Sequential(Block(), Unit())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(5, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
