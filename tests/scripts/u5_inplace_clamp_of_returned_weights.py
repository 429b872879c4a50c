"""A mixture of two experts whose forward floors its mixing weights in place after the
weighted sum read them, and returns them for logging."""
import torch
from torch import nn
from torch.nn import functional as F


class Mixture(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(4, 2)
        self.experts = nn.ModuleList(nn.Linear(4, 3) for _ in range(2))

    def forward(self, x):
        mixing = self.router(x).softmax(-1)
        outs = torch.stack([e(x) for e in self.experts], dim=1)
        mixed = (mixing.unsqueeze(1) @ outs).squeeze(1)
        mixing.clamp_(min=0.05)  # write: mixing
        return mixed, mixing


torch.manual_seed(0)
model = Mixture()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
usage = torch.zeros(2)
for step in range(3):
    x, y = torch.randn(8, 4), torch.randn(8, 3)
    pred, mixing = model(x)
    loss = F.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    usage += mixing.detach().mean(0)
print("TRAINED")
