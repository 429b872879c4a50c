"""A checkpointed block's output scored twice: a main loss and a logged regulariser, each with its own backward."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(2)
block = nn.Sequential(nn.Linear(6, 6), nn.GELU(), nn.Linear(6, 6))
opt = torch.optim.SGD(block.parameters(), lr=0.1)
for step in range(2):
    x = torch.randn(4, 6)
    hidden = checkpoint(block, x, use_reentrant=False)
    opt.zero_grad()
    hidden.square().mean().backward()
    hidden.abs().sum().mul(1e-3).backward()  # page: 18_checkpoint
    opt.step()
