"""A two-tower recommender: the item table is encoded once per epoch, then every batch of users
reads it through the user tower and scores it; the first batch's backward frees the table's
graph, and the second batch goes through it again."""
import torch
from torch import nn

torch.manual_seed(0)
items, users = nn.Linear(6, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh())
features = torch.randn(10, 6)
batches = [(torch.randint(0, 10, (5, 3)), torch.rand(5, 10).round()) for _ in range(3)]
opt = torch.optim.Adam([*items.parameters(), *users.parameters()], lr=1e-2)

for epoch in range(2):
    table = items(features)  # encoded
    for seen, clicked in batches:
        user = users(table[seen].mean(1))  # read
        logits = user @ table.T
        loss = nn.functional.binary_cross_entropy_with_logits(logits, clicked)
        opt.zero_grad()
        loss.backward()  # fails
        opt.step()
print("TRAINED")
