"""A lookup table encodes the ids once, before the loop; only the head is given to the
optimizer. Each step's loss goes back into the table's graph, freed by the first step. Detaching
the codes stops gradients into the table, which no optimizer updates: the head trains as
before."""
import torch

torch.manual_seed(0)
table = torch.nn.Embedding(10, 3)
codes = table(torch.arange(6) % 10)
head = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
target = torch.randn(6, 1)
for step in range(4):
    loss = (head(codes) - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
