"""Notebook 06: a loss accumulated as a tensor across steps."""
import torch

torch.manual_seed(0)
X, Y = torch.randn(64, 4), torch.randn(64, 1)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
total = 0.0
for step in range(3):
    xb, yb = X[step * 8:(step + 1) * 8], Y[step * 8:(step + 1) * 8]
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    total = total + loss  # enters: total
    opt.zero_grad()
    total.backward()
    opt.step()
