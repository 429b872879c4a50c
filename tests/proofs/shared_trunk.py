"""shared_trunk: two losses over one forward, two backward calls."""
import torch
from torch import nn

torch.manual_seed(0)
trunk, reg, cls = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Linear(6, 1), nn.Linear(6, 3)
x, y, label = torch.randn(8, 4), torch.randn(8, 1), torch.randint(0, 3, (8,))
h = trunk(x)
loss_reg = nn.functional.mse_loss(reg(h), y)
loss_cls = nn.functional.cross_entropy(cls(h), label)
loss_reg.backward()
loss_cls.backward()
