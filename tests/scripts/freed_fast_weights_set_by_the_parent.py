"""Fast weights set on each layer by the network's own adapt method (not a method of the layer):
the layer's forward reads them as self.weight. Each query's loss through the adapted network goes
back through the gradient graph that the first query's backward freed."""
import torch
import torch.nn.functional as F
from torch import nn


class Layer(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) * 0.3)

    def forward(self, x):
        return x @ self.weight.t()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = Layer(4, 6), Layer(6, 2)

    def forward(self, x):
        return self.second(torch.tanh(self.first(x)))

    def adapt(self, grads, lr):
        fast = [w - lr * g for w, g in zip([self.first.weight, self.second.weight], grads)]
        del self.first.weight, self.second.weight
        self.first.weight, self.second.weight = fast


torch.manual_seed(0)
for task in range(2):
    net = Net()
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    support = F.mse_loss(net(x), y)
    grads = torch.autograd.grad(support, [net.first.weight, net.second.weight], create_graph=True)
    net.adapt(grads, 0.1)  # adapted
    for query in range(2):
        F.mse_loss(net(x), y).backward()
print("TRAINED")
