"""Mixed precision on the processor: a segmenter and a counter share an encoder, and each task's
loss goes through the gradient scaler and its own backward."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(11)
encoder = nn.Sequential(nn.Linear(8, 20), nn.SiLU(), nn.Linear(20, 20), nn.SiLU())
segment, count = nn.Linear(20, 5), nn.Linear(20, 1)
params = [*encoder.parameters(), *segment.parameters(), *count.parameters()]
opt = torch.optim.SGD(params, lr=0.05)
scaler = torch.amp.GradScaler("cpu")
share = {"segment": 0.7, "count": 0.3}
pixels, classes, totals = torch.randn(12, 8), torch.randint(0, 5, (12,)), torch.rand(12, 1)
for step in range(2):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        code = encoder(pixels)
        task_losses = [("segment", F.cross_entropy(segment(code).float(), classes)),
                       ("count", F.l1_loss(count(code).float(), totals))]
    for task, task_loss in task_losses:
        scaler.scale(share[task] * task_loss).backward()
    scaler.step(opt)
    scaler.update()
