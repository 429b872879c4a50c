"""accumulated_loss: a running total kept as a tensor and backpropagated every step."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X, Y = torch.randn(12, 3), torch.randn(12, 1)
total = 0.0
for step in range(3):
    loss = nn.functional.mse_loss(model(X[4 * step:4 * step + 4]), Y[4 * step:4 * step + 4])
    total = total + loss
    opt.zero_grad()
    total.backward()
    opt.step()
