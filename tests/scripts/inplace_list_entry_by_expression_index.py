"""A top-down pyramid over a list of levels: each level adds the upsampled level above it in
place (``levels[i - 1] += ...``), but a leaky ReLU saved its result, which is that very entry."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
convs = nn.ModuleList([nn.Conv2d(3, 4, 1) for _ in range(3)])
opt = torch.optim.SGD(convs.parameters(), lr=0.1)
for step in range(3):
    inputs = [torch.randn(1, 3, s, s) for s in (8, 4, 2)]
    levels = [torch.sigmoid(conv(x)) for conv, x in zip(convs, inputs)]
    for i in range(len(levels) - 1, 0, -1):
        levels[i - 1] += F.interpolate(levels[i], scale_factor=2.0)  # written
    loss = sum(level.pow(2).mean() for level in levels)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
