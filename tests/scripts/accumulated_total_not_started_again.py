"""Two passes over each batch (a sharpness-aware step: the loss at the weights, then at the
weights nudged along the gradient's sign), each adding one loss per head into a total; the total
is started before the first pass only, so the second pass adds to the first pass's total, whose
graph the first backward freed."""
import torch
from torch import nn

torch.manual_seed(0)
trunk = nn.Linear(5, 8)
heads = nn.ModuleList(nn.Linear(8, 1) for _ in range(3))
params = list(trunk.parameters()) + list(heads.parameters())
opt = torch.optim.SGD(params, lr=0.05)

for step in range(3):
    x, y = torch.randn(6, 5), torch.randn(6, 3)
    total = torch.zeros(())  # started
    feats = trunk(x).tanh()
    for k, head in enumerate(heads):
        total += ((head(feats).squeeze(1) - y[:, k]) ** 2).mean()
    opt.zero_grad()
    total.backward()
    with torch.no_grad():
        nudges = [0.01 * p.grad.sign() for p in params]
        for p, e in zip(params, nudges):
            p.add_(e)
    feats = trunk(x).tanh()
    for k, head in enumerate(heads):  # again
        total += ((head(feats).squeeze(1) - y[:, k]) ** 2).mean()  # enters: total
    opt.zero_grad()
    total.backward()  # fails
    with torch.no_grad():
        for p, e in zip(params, nudges):
            p.sub_(e)
    opt.step()
print("TRAINED")
