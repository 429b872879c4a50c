"""A classifier trained on codes an encoder made once, inside a training function: the codes
keep the encoder's graph, which the first batch's backward frees."""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 5), nn.Tanh())

    def forward(self, x):
        squeezed = self.body(x)
        return squeezed * 2


def train():
    torch.manual_seed(0)
    encoder, head = Encoder(), nn.Linear(5, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    data = torch.randn(12, 6)
    labels = torch.randint(0, 3, (12,))
    codes = encoder(data)  # got
    for first in range(0, 12, 4):
        scores = head(codes[first:first + 4])  # read, edit
        loss = nn.functional.cross_entropy(scores, labels[first:first + 4])
        opt.zero_grad()
        loss.backward()
        opt.step()


train()
