"""A mixture head splits one activation output into means and scales, two views of one
tensor, and divides each in place by a temperature: the activation saved that output, and both
writes change it before backward."""
import torch
from torch import nn

torch.manual_seed(0)


class MixtureHead(nn.Module):
    def __init__(self, width=6, parts=3):
        super().__init__()
        self.parts = parts
        self.proj = nn.Sequential(nn.Linear(width, 2 * parts), nn.Sigmoid())

    def forward(self, x, temperature=2.0):
        out = self.proj(x)
        means, scales = out[:, :self.parts], out[:, self.parts:]
        means /= temperature  # write
        scales /= temperature  # again
        return means.sum(1) + scales.log().sum(1)


head = MixtureHead()
opt = torch.optim.Adam(head.parameters(), lr=0.01)
x, target = torch.randn(12, 6), torch.randn(12)
for step in range(3):
    loss = (head(x) - target).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
