"""accumulated_loss: total += loss, then backward of the total, every step."""
import torch

torch.manual_seed(0)
X = torch.randn(3, 4)
w = torch.randn(4, requires_grad=True)
total = 0
for row in X:
    loss = (row @ w).sin()
    total += loss
    total.backward()
