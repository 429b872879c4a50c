"""A field kept on a plain object: each of two layers reads it and writes its result back
through the object's method, twice a step; the next step starts from the last step's field,
whose graph that step's backward freed. Detaching where the method reads it would also cut the
first layer from the loss; the step's loop holds the object, and detaches it there."""
import torch
from torch import nn

torch.manual_seed(0)


class Field:
    def __init__(self, values):
        self.values = values

    def relax(self, layer):
        self.values = torch.tanh(layer(self.values))  # written


class Relaxer(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, field):
        field.relax(self.first)
        field.relax(self.second)
        return field.values


net, readout = Relaxer(), nn.Linear(3, 1)
opt = torch.optim.SGD([*net.parameters(), *readout.parameters()], lr=0.1)
field = Field(torch.randn(8, 3))
target = torch.randn(8, 1)
for step in range(3):
    relaxed = net(field)  # handed
    loss = (readout(relaxed) - target).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
