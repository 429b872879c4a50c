"""No evidence: a table computed with history is cached by functools.lru_cache, where no name
reaches it; the step adds it to the model's output. No carrier, no telling graph: the command
must say it has no pattern to offer (and link the debugging page), not guess one."""
import functools

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 4)


@functools.lru_cache(maxsize=None)
def offsets():
    return model(torch.ones(1, 4)).tanh()


opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    out = model(torch.randn(3, 4)) + offsets()
    opt.zero_grad()
    out.pow(2).mean().backward()
    opt.step()
# page: chapters/debugging
