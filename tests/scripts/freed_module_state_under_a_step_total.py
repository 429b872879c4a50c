"""A spiking integrator keeps its level on the module and adds to it on every call, firing
through a custom Function with a smooth surrogate gradient (which saves its input); the loop
sums the spikes over a few ticks into a total it starts again each step. The first run sees the
total read before it is assigned; the recording shows it made in this step, and the level the
module keeps from the step before as what brings the old graph."""
import torch
from torch import nn

torch.manual_seed(0)


class Fire(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).to(x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * torch.sigmoid(x) * (1 - torch.sigmoid(x))


class Integrator(nn.Module):
    def __init__(self):
        super().__init__()
        self.level = 0.0

    def forward(self, drive):
        self.level = self.level + (drive - self.level) / 2  # read
        spikes = Fire.apply(self.level - 0.5)
        self.level = self.level * (1 - spikes)  # kept
        return spikes


net = nn.Sequential(nn.Linear(4, 4, bias=False), Integrator())
opt = torch.optim.SGD(net.parameters(), lr=0.1)
target = torch.rand(2, 4)
for step in range(3):
    opt.zero_grad()
    for tick in range(3):
        x = torch.randn(2, 4)
        if tick == 0:
            total = net(x)
        else:
            total += net(x)
    loss = (total / 3 - target).pow(2).mean()  # summed
    loss.backward()  # fails
    opt.step()
print("TRAINED")
