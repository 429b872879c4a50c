"""A fitting helper takes its training data as arguments of the same names as the caller's;
the caller made the data from a tensor that requires grad (a learned input warp), outside the
helper's loop, so every step of the helper backwards through the data's graph again."""
import torch
from torch import nn

torch.manual_seed(0)


def fit(model, inputs, targets, steps=4):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = (model(inputs).squeeze(-1) - targets).pow(2).mean()
        opt.zero_grad()
        loss.backward()  # fails
        opt.step()
    return loss


warp = torch.ones(3, requires_grad=True)
inputs = torch.randn(20, 3) * warp  # made
targets = inputs.sum(-1).tanh()  # targets
model = nn.Linear(3, 1)
fit(model, inputs, targets)
print("TRAINED")
