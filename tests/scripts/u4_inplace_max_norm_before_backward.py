"""A max-norm constraint on the first layer's rows, applied in place under no_grad right after
the forward pass, before the backward (it belongs after the optimizer's step)."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    loss = F.mse_loss(net(x), y)
    with torch.no_grad():
        for w in net.parameters():
            if w.dim() == 2:
                w.mul_(1.0 / w.norm(dim=1, keepdim=True).clamp(min=1.0))  # write: net[2].weight (the loop's w, named as the program holds it)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
