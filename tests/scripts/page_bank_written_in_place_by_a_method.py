"""A class-prototype bank made in __init__ and refreshed row by row in place by a method every
step; the refreshed rows carry the step's graph into the next one."""
import torch
from torch import nn
from torch.nn import functional as F


class Prototypes:
    def __init__(self, classes, dim):
        self.rows = torch.zeros(classes, dim)

    def refresh(self, feats, labels):
        self.rows[labels] = 0.5 * self.rows[labels] + 0.5 * feats


torch.manual_seed(2)
encoder = nn.Linear(5, 4)
bank = Prototypes(3, 4)
opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
for step in range(3):
    x, labels = torch.randn(6, 5), torch.arange(6) % 3
    feats = encoder(x)
    loss = F.cross_entropy(feats @ bank.rows.t(), labels)
    opt.zero_grad()
    loss.backward()  # page: 16_module_state_with_history
    opt.step()
    bank.refresh(feats, labels)
print("TRAINED")
