"""DistributedDataParallel (one process, gloo) lists references to the module's buffers in a list
of its own (`model.modules_buffers`), rebuilt at every forward before the module's forward runs.
The module updates its buffer `self.center` with history; the library's reference to the old
center is not the program's variable and must not be named first (an edit of it is undone at the
next forward): `self.center` is the carrier."""
import os
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

if not dist.is_initialized():  # (the tests run this script twice in one process)
    store = os.path.join(tempfile.mkdtemp(), "store")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("center", torch.zeros(3))

    def forward(self, x):
        out = self.fc(x)
        self.center = 0.9 * self.center + 0.1 * out.mean(0)  # enters: self.center
        return out - self.center


torch.manual_seed(0)
model = DistributedDataParallel(Head())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    out = model(torch.randn(8, 4))
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 16_module_state_with_history
# not: model.modules_buffers
print("trained")
