"""A recurrent reader whose memory is a pair handed from step to step as a list: each step
unpacks it and grows both halves with +=, after the previous step's products saved them."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class MemoryReader(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.key, self.value, self.query = (nn.Linear(width, width) for _ in range(3))

    def forward(self, x, memory=None):
        keys, values = torch.tanh(self.key(x)), self.value(x)
        if memory is None:
            seen, stored = torch.zeros_like(x), torch.zeros_like(x)
        else:
            seen, stored = memory
        seen += keys  # next write: seen
        stored += keys * values  # write: stored
        query = torch.sigmoid(self.query(x))
        return stored * query / (1.0 + seen * query), [seen, stored]


reader, head = MemoryReader(6), nn.Linear(6, 2)
opt = torch.optim.Adam([*reader.parameters(), *head.parameters()], lr=1e-2)
for epoch in range(2):
    tokens, labels = torch.randn(4, 3, 6), torch.randint(0, 2, (3,))
    memory, reads = None, []
    for x in tokens:
        read, memory = reader(x, memory)
        reads.append(read)
    loss = F.cross_entropy(head(torch.stack(reads).mean(0)), labels)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
