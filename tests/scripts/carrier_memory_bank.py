"""Not searched: a reference-attention module keeps earlier keys in a list (its memory bank)
with their graphs, and attends over them in forward."""
import torch
from torch import nn


class BankAttention(nn.Module):
    def __init__(self, dim, size=4):
        super().__init__()
        self.key = nn.Linear(dim, dim)
        self.size = size
        self.bank = []

    def forward(self, x):
        k = self.key(x)
        if self.bank:
            memory = torch.cat(self.bank, 0)  # enters: self.bank[0]
            x = x + torch.softmax(x @ memory.T, -1) @ memory
        self.bank = (self.bank + [k])[-self.size:]
        return x


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 6), BankAttention(6), nn.Linear(6, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(5, 6)).pow(2).mean().backward()
    opt.step()
# page: 16_module_state_with_history
