"""A projection head that opens with ReLU(inplace=True), called on a transposed view of a ReLU's
output: the head's first module writes in place, through that view, what ReluBackward0 saved
(the same numbers: the version counter moves all the same)."""
import torch
from torch import nn

torch.manual_seed(0)


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Conv1d(3, 8, 3, padding=1)
        self.head = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(8, 1))  # made

    def forward(self, x):
        z = torch.relu(self.encode(x)).transpose(1, 2)
        z = self.head(z)  # write
        return z.mean(dim=(1, 2))


model = Scorer()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(4, 3, 9), torch.randn(4)
    loss = ((model(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
