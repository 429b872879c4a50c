"""Each block of a checkpointed stack (the reentrant implementation) reads a memory that the
model's forward computed from one reference pass: the backward that a block's checkpoint runs
frees the reference pass's graph, which the next block's checkpoint backward needs again."""
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class Reader(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin, self.memory = nn.Linear(dim, dim), None

    def forward(self, x):
        return torch.tanh(self.lin(x) + self.memory)  # enters: self.memory


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.reference = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.readers = nn.ModuleList([Reader(dim) for _ in range(2)])

    def forward(self, x, reference):
        feats = self.reference(reference)
        for i, reader in enumerate(self.readers):
            reader.memory = feats * (i + 1)
        x = self.inp(x)
        for reader in self.readers:
            x = checkpoint(reader, x, use_reentrant=True)
        return x


net = Net(4)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for step in range(2):
    x, reference, y = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    loss = F.mse_loss(net(x, reference), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
