"""A memory layer whose first memory is learned: each call starts from the memory the last call
left, or from the learned start on the first call, and keeps the updated memory on itself. The
second batch's backward reaches the first batch's freed graph through the kept memory; a detach
of it would leave the learned start untrained after the first batch."""
import torch
from torch import nn

torch.manual_seed(0)


class Memory(nn.Module):
    def __init__(self, width=6):
        super().__init__()
        self.write_key = nn.Linear(width, width)
        self.start = nn.Parameter(torch.zeros(width, width))
        self.memory = None

    def forward(self, xs):
        memory = self.start if self.memory is None else self.memory  # enters
        reads = []
        for x in xs:
            reads.append(x @ memory)
            memory = memory + 0.1 * torch.tanh(self.write_key(x)).t() @ x / len(x)
        self.memory = memory
        return torch.stack(reads)


layer, head = Memory(), nn.Linear(6, 1)
opt = torch.optim.SGD([*layer.parameters(), *head.parameters()], lr=0.1)
for batch in range(3):
    xs, y = torch.randn(4, 5, 6), torch.randn(4, 5, 1)
    loss = (head(layer(xs)) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
