"""Mixed-precision shape (accelerate's and Lightning's precision plugins do the same): the
backward is `scaler.scale(total_loss).backward()`, and the total is kept as a tensor across
steps. The edit must call backward on each step's loss inside the same wrapper, and never call
a list's method (`clear`) on the tensor."""
import torch

torch.manual_seed(0)
X, Y = torch.randn(32, 4), torch.randn(32, 1)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 4)
total_loss = 0
for step in range(4):
    xb, yb = X[step * 8:(step + 1) * 8], Y[step * 8:(step + 1) * 8]
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    total_loss = total_loss + loss  # enters: total_loss
    opt.zero_grad()
    scaler.scale(total_loss).backward()
    scaler.step(opt)
    scaler.update()
# page: 06_accumulating_loss
print(f"trained, {step + 1} steps")
