"""A recurrent cell carries its state across batches; each step hands the cell the previous
prediction error, detached, together with the state, which nothing detaches."""
import torch

torch.manual_seed(0)
cell = torch.nn.GRUCell(2, 3)
head = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
state = torch.zeros(1, 3)
error = torch.zeros(1, 1)
for batch in range(3):
    x = torch.randn(1, 1)
    state = cell(torch.cat([x, error.detach()], 1), state)
    pred = head(state)
    loss = (pred - x).pow(2).mean()
    error = pred - x
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
