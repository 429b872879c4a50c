"""A head whose positive rates come from exp(); each column is then rescaled in a loop, in place,
inside forward. exp's node saved its own result, which the loop's writes change.
Its fix: the loop writes into a copy made before the loop."""
import torch
from torch import nn

torch.manual_seed(0)


class RateHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 3)
        self.scale = torch.tensor([0.5, 2.0, 1.5])

    def forward(self, x):
        rates = torch.exp(self.lin(x))
        for j in range(3):
            rates[:, j] = rates[:, j] * self.scale[j] + 0.1  # write: rates
        return rates


head = RateHead()
opt = torch.optim.SGD(head.parameters(), lr=0.05)
for step in range(3):
    x, counts = torch.randn(10, 6), torch.rand(10, 3) * 4
    loss = (head(x) - counts * torch.log(head(x))).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
