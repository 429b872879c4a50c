"""A streaming feature that keeps two running sums across time steps, each grown with += and
each read by a product with a learned weight, which saves it: the next step's += writes both
after their products saved them. Writing the first sum out of place leaves the second written."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class RunningMoments(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.first, self.second = nn.Parameter(torch.ones(width)), nn.Parameter(torch.ones(width))

    def forward(self, x, sums):
        total, squares = sums if sums is not None else (torch.zeros_like(x), torch.zeros_like(x))
        total += x  # write: total
        squares += x * x  # next write: squares
        return self.first * total + self.second * squares, (total, squares)


moments, head = RunningMoments(4), nn.Linear(4, 1)
opt = torch.optim.SGD([*moments.parameters(), *head.parameters()], lr=0.05)
for epoch in range(2):
    series, target = torch.randn(5, 3, 4), torch.randn(3, 1)
    sums, outputs = None, []
    for x in series:
        feature, sums = moments(x, sums)
        outputs.append(head(feature))
    loss = F.mse_loss(torch.stack(outputs).mean(0), target)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
