"""two_networks: one network's output fed to a second after the first's backward."""
import torch
from torch import nn

torch.manual_seed(0)
net1, net2 = nn.Linear(6, 4), nn.Linear(4, 2)
x, t1, t2 = torch.randn(5, 6), torch.randn(5, 4), torch.randn(5, 2)
h = net1(x)
loss1 = nn.functional.mse_loss(h, t1)
loss1.backward()
loss2 = nn.functional.mse_loss(net2(h), t2)
loss2.backward()
