"""modified_in_place: backward with retain_graph, optimizer.step(), backward again."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(6, 4), torch.randn(6, 1)
loss = nn.functional.mse_loss(net(x), y)
loss.backward(retain_graph=True)
opt.step()
loss.backward()
