"""A word model whose output layer reuses its embedding table; the rows it used are scaled back
to unit length between building the loss and its backward."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
table = nn.Embedding(12, 4)
opt = torch.optim.SGD(table.parameters(), lr=0.1)
for step in range(3):
    ids = torch.randint(12, (6,))
    scores = table(ids) @ table.weight.t()
    loss = F.cross_entropy(scores, ids)
    with torch.no_grad():
        table.weight[ids] = F.normalize(table.weight[ids], dim=1)  # write: table.weight
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
