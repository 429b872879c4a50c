"""An image fitted to targets that a feature net made once, before the loop, as a list: the
targets keep the feature net's graph, which the first backward frees."""
import torch
from torch import nn

torch.manual_seed(0)
features = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
styles = [torch.randn(2, 4), torch.randn(2, 4)]
targets = [features(s).sum(0) for s in styles]  # got
image = torch.zeros(2, 4, requires_grad=True)
opt = torch.optim.SGD([image], lr=0.1)
for rounds in range(3):
    losses = [(features(image).sum(0) - t).pow(2).mean() for t in targets]  # read
    loss = sum(losses)
    opt.zero_grad()
    loss.backward()
    opt.step()
