"""Predictions made once before a loop over batches, whose loss is backpropagated each turn and
then stepped by the one optimizer: the second turn's backward meets weights the first step
changed."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
pred = model(x)
for batch in range(3):
    loss = (pred - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward(retain_graph=True)  # fails
    optimizer.step()
print("TRAINED")
