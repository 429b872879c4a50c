"""Each sample's prediction stored by its id after the update and mixed into the next round's
target (self-distillation from the previous round): the dict is read back by key."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
net = nn.Linear(3, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 2)
earlier = {}
for rnd in range(3):
    for ids in torch.arange(8).split(4):
        out = net(x[ids])
        if rnd == 0:
            goal = y[ids]
        else:
            goal = 0.5 * y[ids] + 0.5 * torch.stack([earlier[k] for k in ids.tolist()])
        loss = F.mse_loss(out, goal)
        opt.zero_grad()
        loss.backward()
        opt.step()
        for k, row in zip(ids.tolist(), out):
            earlier[k] = row
print("TRAINED")
