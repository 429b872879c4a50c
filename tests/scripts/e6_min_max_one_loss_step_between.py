"""A two-player game on one loss (the rival perturbs what the player reads): the first player's gradient is taken with the graph kept, its
step runs, then the second player's backward goes through the same graph (meant simultaneous)."""
import torch
from torch import nn

torch.manual_seed(0)
player = nn.Linear(3, 3)
rival = nn.Linear(3, 3)
opt_p = torch.optim.SGD(player.parameters(), lr=0.05)
opt_r = torch.optim.SGD(rival.parameters(), lr=0.05)
for step in range(3):
    x = torch.randn(6, 3)
    loss = (player(x + torch.tanh(rival(x))) - x).pow(2).mean()
    grads = torch.autograd.grad(loss, list(player.parameters()), retain_graph=True)
    for p, g in zip(player.parameters(), grads):
        p.grad = g
    opt_p.step()
    opt_r.zero_grad()
    (-loss).backward(inputs=list(rival.parameters()))
    opt_r.step()
print("TRAINED")
