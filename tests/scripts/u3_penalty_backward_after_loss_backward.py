"""A smoothness penalty from a create_graph gradient, backwarded after the data loss's backward."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(2, 10), nn.Softplus(), nn.Linear(10, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
inputs, y = torch.randn(12, 2), torch.randn(12, 1)
for step in range(3):
    x = inputs.clone().requires_grad_()
    pred = net(x)
    mse = nn.functional.mse_loss(pred, y)
    (dx,) = torch.autograd.grad(pred.sum(), x, create_graph=True)
    smooth = dx.pow(2).mean()
    opt.zero_grad()
    mse.backward()
    (0.1 * smooth).backward()  # enters: smooth
    opt.step()
# page: 02_two_losses_one_forward
