"""What DistributedDataParallel keeps of the module's buffers, as the debugging chapter says it.

The chapter ("Inside a framework") says DDP keeps a list of references to the module's buffers,
``modules_buffers``, rebuilt at every forward, not copies of them: a module that binds its buffer
attribute to a new tensor during its forward leaves the old tensor in DDP's list. Checked here on
the installed torch, with DDP in one process (gloo), in a subprocess so that the process group
does not outlive the test.
"""

from __future__ import annotations

import subprocess
import sys

CHECK = r"""
import os, tempfile
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo", init_method="file://" + os.path.join(tempfile.mkdtemp(), "store"),
                        rank=0, world_size=1)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("center", torch.zeros(3))

    def forward(self, x):
        out = self.fc(x)
        self.center = 0.9 * self.center.detach() + 0.1 * out.mean(0)   # bound to a new tensor
        return out - self.center


torch.manual_seed(0)
model = DistributedDataParallel(Head())
lists = []
for step in range(3):
    held = model.module.center          # the buffer as the forward begins
    model(torch.randn(8, 4))
    listed = model.modules_buffers
    assert len(listed) == 1
    assert listed[0] is held, "not the module's buffer itself"              # a reference ...
    assert listed[0].data_ptr() == held.data_ptr()                          # ... not a copy
    assert model.module.center is not held                                  # the module moved on
    assert all(listed is not earlier for earlier in lists), "the same list"  # rebuilt each forward
    lists.append(listed)
dist.destroy_process_group()
print("DDP-BUFFERS-OK")
"""


def test_ddp_lists_references_to_the_module_buffers_rebuilt_at_every_forward(tmp_path):
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0 and "DDP-BUFFERS-OK" in result.stdout, result.stderr[-3000:]
