"""A token mixer over (batch, tokens, features) inputs: a linear layer's 3-d output is a view of
its 2-d product, so the in-place ReLU on it and the in-place add after it are writes into a view,
each a CopySlices node that keeps its operation's own node inside. The add changes the ReLU's
result, which the ReLU's node saved: a node no walk of the graph from Python reaches."""
import torch
from torch import nn

torch.manual_seed(0)


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)
        self.shift = nn.Parameter(torch.zeros(2 * dim))

    def forward(self, tokens):
        hidden = self.up(tokens)
        torch.relu_(hidden)
        hidden += self.shift  # write: hidden
        return tokens + self.down(hidden)


mixer = Mixer(8)
opt = torch.optim.Adam(mixer.parameters(), lr=1e-2)
for step in range(2):
    tokens, target = torch.randn(3, 5, 8), torch.randn(3, 5, 8)
    loss = ((mixer(tokens) - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
