"""Notebook 08: backward with retain_graph, optimizer.step(), backward again (in-place error)."""
import torch

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(10, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(4, 10), torch.randn(4, 1)
loss = torch.nn.functional.mse_loss(net(x), y)
loss.backward(retain_graph=True)
opt.step()
loss.backward()  # enters: loss
