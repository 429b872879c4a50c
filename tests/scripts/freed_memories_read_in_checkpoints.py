"""Two readers, each run under a reentrant checkpoint, attend to memories made by a trained
encoder in one chain (the second memory is refined from the first): the second reader's backward,
run inside the step's backward, frees the first memory's graph, and the first reader's then meets
it, in the very first step."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Reader(nn.Module):
    def __init__(self):
        super().__init__()
        self.attend = nn.Linear(12, 6)
        self.memory = None

    def forward(self, x):
        return x + torch.tanh(self.attend(torch.cat([x, self.memory], dim=1)))


torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
refine = nn.Linear(6, 6)
stem = nn.Linear(6, 6)
readers = nn.ModuleList([Reader(), Reader()])
optimizer = torch.optim.Adam([*encoder.parameters(), *refine.parameters(), *stem.parameters(),
                              *readers.parameters()], lr=1e-2)
for step in range(3):
    reference, x, target = torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6)
    first = encoder(reference)
    readers[0].memory, readers[1].memory = first, torch.tanh(refine(first))
    x = stem(x)
    for reader in readers:
        x = checkpoint(reader, x, use_reentrant=True)  # checkpoint
    loss = (x - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
