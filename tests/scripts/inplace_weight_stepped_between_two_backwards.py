"""Two backward calls through one graph kept with retain_graph=True, and the optimizer's step
between them: the step writes in place a weight the graph saved."""
import torch

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
opt = torch.optim.Adam(net.parameters(), lr=0.1)
x = torch.randn(5, 3)
for i in range(3):
    loss = net(x).pow(2).mean()  # built
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()  # write
    loss.backward()  # fails
