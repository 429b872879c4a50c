"""A regression model with an activity penalty: a helper backpropagates the penalty, which frees
the graph of the model's output; the data loss, made from the same output, is backwarded after
it and fails. The two calls start from different losses: leaving the helper's backward out
would lose the penalty's gradients, though every weight would still get one."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)


def penalise(output, weight=0.1):
    penalty = weight * output.pow(2).mean()
    penalty.backward()  # freed


for step in range(3):
    x, y = torch.randn(16, 5), torch.randn(16, 2)
    out = model(x)
    data_loss = F.mse_loss(out, y)
    penalise(out)
    data_loss.backward()  # fails
    opt.step()
    opt.zero_grad()
print("TRAINED")
