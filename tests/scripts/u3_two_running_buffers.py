"""Two running statistics kept as buffers and updated with history: both must lose their graph."""
import torch
from torch import nn

torch.manual_seed(0)


class Whiten(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.register_buffer("ema_mean", torch.zeros(d))
        self.register_buffer("ema_sq", torch.ones(d))

    def forward(self, x):
        self.ema_mean = 0.9 * self.ema_mean + 0.1 * x.mean(0)  # enters: self.ema_mean
        self.ema_sq = 0.9 * self.ema_sq + 0.1 * (x * x).mean(0)
        spread = (self.ema_sq - self.ema_mean ** 2).clamp_min(1e-4).sqrt()
        return (x - self.ema_mean) / spread


model = nn.Sequential(nn.Linear(3, 5), Whiten(5), nn.Linear(5, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data, target = torch.randn(12, 3), torch.randn(12, 1)
for epoch in range(3):
    loss = nn.functional.mse_loss(model(data), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 16_module_state_with_history
