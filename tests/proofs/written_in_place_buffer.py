"""written_in_place: a buffer read by a matrix product (which saves it), then overwritten in
place in the same forward."""
import torch
import torch.nn.functional as F
from torch import nn


class Contrast(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 4)
        self.register_buffer("queue", F.normalize(torch.randn(6, 4), dim=1))

    def forward(self, x):
        q = F.normalize(self.encoder(x), dim=1)
        negatives = q @ self.queue.t()
        self.queue[:len(q)] = q.detach()
        return negatives


torch.manual_seed(0)
model = Contrast()
x = torch.randn(3, 8)
loss = torch.logsumexp(model(x) / 0.1, dim=1).mean()
loss.backward()
