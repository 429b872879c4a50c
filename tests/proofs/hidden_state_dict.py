"""hidden_state, kept in a dict entry: a cell's state stored under a key across steps."""
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.GRUCell(3, 4)
xs = torch.randn(4, 2, 3)
memory = {"h": torch.zeros(2, 4)}
for x in xs:
    memory["h"] = cell(x, memory["h"])
    loss = memory["h"].pow(2).mean()
    loss.backward()
