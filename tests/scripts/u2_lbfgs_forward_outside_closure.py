"""L-BFGS calls the closure several times per step; the prediction is computed once outside it,
so the closure's second backward goes through the freed graph."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
x, y = torch.randn(16, 3), torch.randn(16, 1)
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
for epoch in range(3):
    prediction = model(x)

    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(prediction, y)  # enters: prediction
        loss.backward()
        return loss
    optimizer.step(closure)
# page: 13_tensor_outside_loop
