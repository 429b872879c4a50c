"""A loss that turns the probability of masked entries into its complement, writing into the
softmax output it was computed from. softmax's node saved that output.
Its fix: the write goes into a copy of the probabilities."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.1)


def complement_loss(logits, mask):
    p = torch.softmax(logits, dim=1)
    p[mask] = 1 - p[mask]  # write: p
    return -torch.log(p.clamp(min=1e-4)).mean()


for step in range(3):
    x = torch.randn(12, 5)
    mask = torch.rand(12, 4) > 0.6
    loss = complement_loss(net(x), mask)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
