"""A block makes its activation from a name, looking the class up in ``torch.nn``
(``getattr(nn, name)(inplace=True)``); its forward hands the block's input both to a linear
shortcut, which saves it, and to the activation, which writes it in place. The keyword is made
``False`` where the class is made."""
import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, act_name="ELU"):
        super().__init__()
        self.shortcut = nn.Linear(4, 4)
        self.act = getattr(nn, act_name)(inplace=True)  # made
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        skip = self.shortcut(x)
        return self.fc(self.act(x)) + skip


stem, block, head = nn.Linear(3, 4), Block(), nn.Linear(4, 1)
params = list(stem.parameters()) + list(block.parameters()) + list(head.parameters())
optimizer = torch.optim.SGD(params, lr=0.1)
for step in range(3):
    loss = head(block(stem(torch.randn(8, 3)))).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
