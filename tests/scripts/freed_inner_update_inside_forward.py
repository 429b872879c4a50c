"""A prototype layer trains its own prototypes inside forward, with an optimizer of its own, on
a loss that reads the encoder's output as it comes in; the main loss, built after that forward,
then goes back through the encoder part that the inner backward went through."""
import torch
from torch import nn


class Prototypes(nn.Module):
    def __init__(self):
        super().__init__()
        self.centers = nn.Parameter(torch.randn(4, 3))
        self.own = torch.optim.SGD([self.centers], lr=0.1)

    def forward(self, z):
        near = self.centers[torch.cdist(z, self.centers).argmin(dim=1)]
        pull = (near - z).pow(2).mean()  # inner loss
        self.own.zero_grad()
        pull.backward()
        self.own.step()
        return z + (near - z).detach()


torch.manual_seed(0)
encoder, protos, decoder = nn.Linear(5, 3), Prototypes(), nn.Linear(3, 5)
opt = torch.optim.SGD([*encoder.parameters(), *decoder.parameters()], lr=0.1)
for step in range(3):
    x = torch.randn(8, 5)
    z = encoder(x)
    loss = (decoder(protos(z)) - x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
