"""A small healthy training loop (300 steps of a two-layer MLP), for the command's overhead."""
import torch

torch.set_num_threads(1)  # steadier timings on a shared machine
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(256, 32), torch.randn(256, 1)
for step in range(300):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(round(loss.item(), 6))
