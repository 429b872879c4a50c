"""Decoder blocks under a reentrant checkpoint read features that a trainable encoder keeps on them."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mix = nn.Linear(2 * dim, dim)
        self.guide = None  # set by the encoder before each forward

    def forward(self, x):
        return x + torch.tanh(self.mix(torch.cat([x, self.guide], -1)))


torch.manual_seed(9)
encoder = nn.Sequential(nn.Linear(4, 4), nn.SiLU())
stem = nn.Linear(4, 4)
blocks = nn.ModuleList([Block(4) for _ in range(2)])
opt = torch.optim.AdamW([*encoder.parameters(), *stem.parameters(), *blocks.parameters()], lr=1e-3)
reference, x = torch.randn(3, 4), torch.randn(3, 4)
guide = encoder(reference)
for block in blocks:
    block.guide = guide
h = stem(x)
for block in blocks:
    h = checkpoint(block, h, use_reentrant=True)
opt.zero_grad()
h.pow(2).mean().backward()  # page: 18_checkpoint
opt.step()
