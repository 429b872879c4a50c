"""A table object built once, before training, from a dict of feature columns, one of them
encoded by an embedding that is not trained: each batch of rows reads that column, whose graph
the first batch's backward freed."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Table:
    def __init__(self, columns, y):
        self.columns, self.y = columns, y

    def rows(self, index):
        return {k: v[index] for k, v in self.columns.items()}, self.y[index]


def encode(words, embed):
    return embed(torch.tensor([len(w) % 10 for w in words]))


embed = nn.Embedding(10, 4)
words = ["a", "bb", "ccc", "dddd"] * 10
table = Table({"text": encode(words, embed), "num": torch.randn(40, 2)}, torch.randn(40, 1))  # made
model = nn.Linear(6, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for start in range(0, 40, 10):
    columns, y = table.rows(slice(start, start + 10))
    loss = F.mse_loss(model(torch.cat([columns["text"], columns["num"]], 1)), y)
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
