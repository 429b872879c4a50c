"""A cache of past keys and values (transformers' DynamicCache's shape, a library's object:
tests/scripts/standin_frameworks.py) carried from one segment into the next without detaching
it: the second segment's attention reads keys whose graph the first backward freed. The
program's variable `past` holds the cache; the command must name it, and the edit detaches the
cache's tensors between segments."""
import torch

from standin_frameworks import DynamicCache


class TinyAttention(torch.nn.Module):
    def __init__(self, width=8, layers=2):
        super().__init__()
        self.project = torch.nn.ModuleList(torch.nn.Linear(width, 3 * width) for _ in range(layers))

    def forward(self, x, cache=None):
        cache = cache if cache is not None else DynamicCache(len(self.project))
        for index, project in enumerate(self.project):
            q, k, v = project(x).chunk(3, dim=-1)
            k, v = cache.update(k, v, index)
            x = x + torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
        return x, cache


torch.manual_seed(0)
model = TinyAttention()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
tokens = torch.randn(2, 12, 8)
past = None
for start in range(0, 12, 4):
    segment = tokens[:, start:start + 4]
    out, cache = model(segment, past)  # enters: past
    past = cache
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 05_rnn_hidden_state
print("trained")
