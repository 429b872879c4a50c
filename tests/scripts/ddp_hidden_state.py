"""Two ranks (gloo, CPU), each training a DistributedDataParallel RNN whose hidden state `h`
is carried from one batch into the next without detach(): the second backward fails on every
rank. With --fixed, `h` is detached at the start of each batch and training runs to the end."""
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)                       # the same model on every rank
model = DistributedDataParallel(torch.nn.RNN(3, 8, batch_first=True))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
torch.manual_seed(1 + rank)                # each rank its own data
series, targets = torch.randn(2, 20, 3), torch.randn(2, 20, 8)

fixed = "--fixed" in sys.argv
h = torch.zeros(1, 2, 8)
for b in range(4):
    xb, yb = series[:, b * 5:(b + 1) * 5], targets[:, b * 5:(b + 1) * 5]
    out, h = model(xb, h.detach() if fixed else h)  # enters: h
    loss = F.mse_loss(out, yb)
    opt.zero_grad()
    loss.backward()                        # DDP averages the gradients over the ranks here
    opt.step()
print(f"rank {rank}: trained, loss {loss.item():.4f}")
dist.destroy_process_group()
