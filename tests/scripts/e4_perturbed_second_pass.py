"""A sharpness-seeking optimizer in two moves: the first backward finds the direction, the
optimizer's `ascent_step()` moves the weights there in place, and the second loss, meant to be
taken at the moved weights, reuses the prediction made before the move."""
import torch
from torch import nn


class Climber(torch.optim.Optimizer):
    def __init__(self, params, radius=0.05, lr=0.1):
        super().__init__(params, dict(radius=radius, lr=lr))

    @torch.no_grad()
    def ascent_step(self):
        for group in self.param_groups:
            for p in group["params"]:
                shift = group["radius"] * p.grad / (p.grad.norm() + 1e-12)
                self.state[p]["shift"] = shift
                p.add_(shift)
                p.grad = None

    @torch.no_grad()
    def descent_step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.sub_(self.state[p]["shift"])
                p.sub_(group["lr"] * p.grad)
                p.grad = None


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
optimizer = Climber(net.parameters())
inputs, labels = torch.randn(10, 3), torch.randint(0, 2, (10,))
for epoch in range(3):
    scores = net(inputs)
    nn.functional.cross_entropy(scores, labels).backward()
    optimizer.ascent_step()
    nn.functional.cross_entropy(scores, labels).backward()  # enters: scores
    optimizer.descent_step()
print("trained")
