"""A gate whose scale is cached once, with its graph, on the module, and read inside a
reentrant checkpointed block: the second step's checkpointed backward goes back into the cached
scale's graph, which the first step's freed. The failing graph does not show the scale's own
parameter: the checkpoint builds its inner graph only when its backward runs."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4) * 0.3)
        self.temp = nn.Parameter(torch.zeros(4))
        self.cached = None

    def forward(self, x):
        return torch.tanh(x @ (self.weight * self.cached))  # read


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.gate, self.out = nn.Linear(3, 4), Gate(), nn.Linear(4, 1)

    def forward(self, x):
        h = self.inp(x)
        if self.gate.cached is None:
            self.gate.cached = self.gate.temp.exp()
        return self.out(checkpoint(self.gate, h, use_reentrant=True))


net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
for step in range(3):
    x, y = torch.randn(6, 3), torch.randn(6, 1)
    loss = (net(x) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
