"""Notebook 04: one network's output fed to a second network after the first backward."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
net1, net2 = torch.nn.Linear(10, 5), torch.nn.Linear(5, 2)
x, t1, t2 = torch.randn(4, 10), torch.randn(4, 5), torch.randn(4, 2)
h = net1(x)
loss1 = F.mse_loss(h, t1)
loss1.backward()
loss2 = F.mse_loss(net2(h), t2)  # enters: h
loss2.backward()
