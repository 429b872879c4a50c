"""Two stages, each a module with its own optimizer and its own update method: the first
returns its output with its loss; the second stage's loss is computed on that output, updated
first, and its backward goes through the first stage's graph, which the first stage's update,
on the loss it returned, then needs again."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Stage(nn.Module):
    def __init__(self, size_in, size_out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(size_in, 24), nn.GELU(), nn.Linear(24, size_out))
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-2)

    def run(self, inputs, target):
        out = self.net(inputs)
        return out, F.smooth_l1_loss(out, target)

    def learn(self, loss):
        self.optimizer.zero_grad()
        loss.backward()  # fails
        self.optimizer.step()


coarse, fine = Stage(10, 6), Stage(6, 4)
inputs, middle, target = torch.randn(32, 10), torch.randn(32, 6), torch.randn(32, 4)
for it in range(3):
    sketch, sketch_loss = coarse.run(inputs, middle)
    sketch = torch.tanh(sketch)  # joins
    result, result_loss = fine.run(sketch, target)
    fine.learn(result_loss)
    coarse.learn(sketch_loss)
print("TRAINED")
