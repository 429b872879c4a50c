"""A custom Function that runs its blocks' gradients itself: its backward calls backward once
per block through each block's output, and each block reads one shared embedding that the model
computes from a learned parameter before the Function. The Function returns no gradient for the
embedding itself, so the parameter learns only through those inner backward calls; the first
inner call frees the embedding's graph and the second block's fails."""
import torch
from torch import nn


def block_backward(block, x, grad, shared):
    with torch.enable_grad():
        out = block(x) + shared  # read
    out.backward(grad)  # fails


class Blocks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, shared, blocks, *params):
        ctx.x, ctx.shared, ctx.blocks = x.detach(), shared, blocks
        with torch.no_grad():
            return sum(block(x) + shared for block in blocks)

    @staticmethod
    def backward(ctx, grad):
        x = ctx.x.requires_grad_(True)
        for block in ctx.blocks:
            block_backward(block, x, grad, ctx.shared)  # hands
        return (x.grad, None, None) + (None,) * len(list(ctx.blocks.parameters()))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.position = nn.Parameter(torch.zeros(4))
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        shared = torch.tanh(self.position)
        return self.head(Blocks.apply(x, shared, self.blocks, *self.blocks.parameters()))


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(5, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
