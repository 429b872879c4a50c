"""In place inside forward: a queue of negatives is read (and saved by the matrix product), then
overwritten in place in the same forward; the loss's backward meets the changed queue."""
import torch
import torch.nn.functional as F
from torch import nn


class Contrast(nn.Module):
    def __init__(self, size=16, dim=4):
        super().__init__()
        self.encoder = nn.Linear(8, dim)
        self.register_buffer("queue", F.normalize(torch.randn(size, dim), dim=1))
        self.ptr = 0

    def forward(self, x):
        q = F.normalize(self.encoder(x), dim=1)
        negatives = q @ self.queue.t()
        keys = q.detach()
        self.queue[self.ptr:self.ptr + len(keys)] = keys  # write: self.queue
        self.ptr = (self.ptr + len(keys)) % len(self.queue)
        return negatives


torch.manual_seed(0)
model = Contrast()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    logits = model(torch.randn(4, 8))
    loss = torch.logsumexp(logits / 0.1, dim=1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 16_module_state_with_history
