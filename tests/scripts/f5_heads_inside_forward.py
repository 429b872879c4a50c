"""A module computes its shared features inside forward and returns two heads; the loop
backpropagates each head's loss, averaged over the heads, on its own."""
import torch
import torch.nn.functional as F
from torch import nn


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU())
        self.left, self.right = nn.Linear(12, 2), nn.Linear(12, 1)

    def forward(self, x):
        shared = self.body(x)
        return self.left(shared), self.right(shared)


def train(steps=2):
    torch.manual_seed(3)
    model = TwoHeads()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, side, size = torch.randn(9, 5), torch.randint(0, 2, (9,)), torch.randn(9, 1)
    for _ in range(steps):
        opt.zero_grad()
        logits, guess = model(x)
        parts = [F.cross_entropy(logits, side), F.mse_loss(guess, size)]
        for part in parts:
            (part / len(parts)).backward()
        opt.step()
    return model


model = train()
