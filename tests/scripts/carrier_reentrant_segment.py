"""Not traced: a reentrant checkpoint's segment uses a scale computed once before the loop, with
history; the checkpoint's own backward (run inside the outer one) hits its freed graph."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
gain = nn.Parameter(torch.ones(8))
scale = torch.sigmoid(gain) * 2
block = nn.Sequential(nn.Linear(8, 8), nn.Tanh())


def segment(h):
    return block(h) * scale  # enters: scale


opt = torch.optim.SGD(list(block.parameters()) + [gain], lr=0.1)
for step in range(2):
    x = torch.randn(4, 8, requires_grad=True)
    loss = checkpoint(segment, x, use_reentrant=True).pow(2).mean()
    opt.zero_grad()
    loss.backward()
# page: 13_tensor_outside_loop
