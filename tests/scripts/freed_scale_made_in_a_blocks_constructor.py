"""A block keeps a scale computed once in its constructor from its own parameter
(``self.scale = self.log_scale.exp()``) and multiplies by it in its forward, which a bigger
model's loss method runs: the first step's backward frees the graph of that one computation, and the second
step goes through it again (the recording holds it as ``net.block.scale``)."""
import torch
from torch import nn

torch.manual_seed(0)


class Scaled(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.log_scale = nn.Parameter(torch.zeros(width))
        self.scale = self.log_scale.exp()  # made

    def forward(self, x):
        return self.lin(x) * self.scale  # read


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Scaled(4)
        self.out = nn.Linear(4, 1)

    def loss(self, x, y):
        return nn.functional.mse_loss(self.out(torch.tanh(self.block(x))), y)


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    loss = net.loss(x, y)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
