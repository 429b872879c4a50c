"""Adversarial training: each attack step computes the model's output again into a new name,
but its loss is built from the clean pass's output, whose graph the clean backward freed."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def nudge(net, eps=0.01):
    with torch.no_grad():
        net[0].weight.add_(eps * torch.sign(net[0].weight.grad))


for step in range(3):
    x, y = torch.randn(4, 5), torch.randint(0, 3, (4,))
    scores = model(x)
    loss = F.cross_entropy(scores, y)
    opt.zero_grad()
    loss.backward()
    for k in range(2):
        nudge(model)
        attacked = model(x)
        loss_adv = F.cross_entropy(scores, y)  # stale
        loss_adv.backward()
    opt.step()
print("TRAINED")
