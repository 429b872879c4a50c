"""A sequence tagger whose forward gates its token features in place after a linear layer read
them (through a reshape, so the node saved a view of the features)."""
import torch
from torch import nn
from torch.nn import functional as F


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 6)
        self.salience = nn.Linear(6, 1)
        self.tags = nn.Linear(6, 3)

    def forward(self, tokens):
        feats = self.embed(tokens)
        gate = torch.sigmoid(self.salience(feats))
        feats *= gate  # write: feats
        return self.tags(feats)


torch.manual_seed(0)
model = Tagger()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    tokens, labels = torch.randint(20, (4, 5)), torch.randint(3, (4, 5))
    loss = F.cross_entropy(model(tokens).reshape(-1, 3), labels.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
