"""accelerate's shape (tests/scripts/standin_frameworks.py): the total loss kept as a tensor
across steps and backwarded through `accelerator.backward(...)`, whose frames are a library's.
The edit must call the wrapper on each step's loss (not `total_loss.clear()`), and the earlier
backward must be named at the program's own line, not inside the library."""
import torch

from standin_frameworks import Accelerator

torch.manual_seed(0)
accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)
data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(4)]
total_loss = 0
for x, y in data:
    loss = torch.nn.functional.mse_loss(model(x), y)
    total_loss = total_loss + loss  # enters: total_loss
    opt.zero_grad()
    accelerator.backward(total_loss)
    opt.step()
# page: 06_accumulating_loss
print("trained")
