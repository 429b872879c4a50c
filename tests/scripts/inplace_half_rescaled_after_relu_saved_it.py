"""A gated layer that rescales the first half of its rectified features by a learned gate,
written into the features in place: the ReLU's node saved the features whole (its result) and
the product's node saved the half it read, so the write changes what both saved."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class HalfGate(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.gate = nn.Linear(width, 1)

    def forward(self, x):
        hidden = F.relu(self.fc(x))
        half = hidden.shape[1] // 2
        hidden[:, :half] = hidden[:, :half] * torch.sigmoid(self.gate(x))  # write
        return hidden


model = nn.Sequential(HalfGate(6), nn.Linear(6, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x, y = torch.randn(10, 6), torch.randint(0, 2, (10,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
