"""Pages from words: the file calls checkpoint in a function this step never runs; the failure
is a plain second backward, not one through a checkpointed region."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 1))


def memory_saving_forward(x):
    return checkpoint(model, x, use_reentrant=False)


x = torch.randn(3, 5)
loss = model(x).pow(2).mean()
loss.backward()
print("first backward done")
loss.backward()  # enters: loss
# page: 01_backward_twice
