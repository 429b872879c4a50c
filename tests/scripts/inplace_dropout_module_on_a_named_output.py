"""A block whose dropout module, made with inplace=True, is run on a sigmoid's output that a local
name holds: the name is the tensor written, the module is what wrote it."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 10)
        self.drop = nn.Dropout(0.2, inplace=True)  # made

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        return self.drop(h)  # write


torch.manual_seed(0)
net = nn.Sequential(Block(), nn.Linear(10, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for it in range(3):
    x = torch.randn(16, 10)
    loss = net(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
