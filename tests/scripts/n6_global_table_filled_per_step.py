"""A tagger that writes each position's features into a table made once at the top of the
script, row by row inside its step function, then reads the whole table for the loss."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
encode, head = nn.Linear(5, 3), nn.Linear(3, 2)
opt = torch.optim.SGD([*encode.parameters(), *head.parameters()], lr=0.1)
table = torch.zeros(4, 3)


def step(words, tags):
    for i in range(words.shape[0]):
        table[i] = torch.tanh(encode(words[i]))  # enters: table
    loss = F.cross_entropy(head(table), tags)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


for batch in range(3):
    step(torch.randn(4, 5), torch.randint(2, (4,)))
print("TRAINED")
