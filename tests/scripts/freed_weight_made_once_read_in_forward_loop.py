"""A module computes a positive weight once, when it is made (self.weight = log_weight.exp()),
and its forward reads it in a loop over time steps: the second batch's backward meets the
graph the first backward freed."""
import torch

torch.manual_seed(0)


class Decay(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.log_weight = torch.nn.Parameter(torch.zeros(3))
        self.weight = self.log_weight.exp()  # built

    def forward(self, xs):
        h = torch.zeros(3)
        for x in xs:
            h = h * self.weight + x
        return h


model = Decay()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in range(3):
    xs = torch.randn(4, 3)
    loss = model(xs).pow(2).sum()
    opt.zero_grad()
    loss.backward()  # freed, fails
    opt.step()
