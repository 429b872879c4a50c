"""Feature matching through forward hooks: hooks on a frozen reference network and on the
trained network append each layer's output to two lists, and the loss walks both lists with
for i in range(len(...)). Nothing empties the lists, so the second step's loss reaches the
first step's freed maps."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)

reference = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
trained = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
reference.requires_grad_(False)
ref_maps, own_maps = [], []
for index in (1, 3):
    reference[index].register_forward_hook(lambda m, i, o: ref_maps.append(o))
    trained[index].register_forward_hook(lambda m, i, o: own_maps.append(o))


def matching(targets, outputs):
    total = 0.0
    for i in range(len(outputs)):
        total = total + F.mse_loss(outputs[i], targets[i])
    return total


optimizer = torch.optim.SGD(trained.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(5, 6)
    reference(x)
    trained(x)
    loss = matching(ref_maps, own_maps)
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
