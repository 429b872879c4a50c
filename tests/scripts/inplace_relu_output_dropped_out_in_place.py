"""A tagger of residual blocks that turns every activation and dropout layer in-place after
building them: each block's dropout then scales, in place, the output that the ReLU before it
saved for its backward. No optimizer step runs before the failing backward."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.up, self.down = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)
        self.act, self.drop, self.norm = nn.ReLU(), nn.Dropout(0.2), nn.LayerNorm(width)

    def forward(self, x):
        inner = self.drop(self.act(self.up(x)))  # write: self.drop
        return self.norm(x + self.down(inner))


class Tagger(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.stem, self.out = nn.Linear(5, width), nn.Linear(width, 3)
        self.blocks = nn.Sequential(Block(width), Block(width))
        for layer in self.modules():
            if isinstance(layer, (nn.ReLU, nn.Dropout)):
                layer.inplace = True

    def forward(self, x):
        return self.out(self.blocks(self.stem(x)))


tagger = Tagger()
opt = torch.optim.Adam(tagger.parameters(), lr=1e-2)
for batch in range(2):
    x, tags = torch.randn(4, 6, 5), torch.randint(0, 3, (4, 6))
    loss = F.cross_entropy(tagger(x).reshape(-1, 3), tags.reshape(-1))
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
