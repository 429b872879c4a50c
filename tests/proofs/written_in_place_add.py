"""written_in_place: `probs += 0.5` writes into the output that sigmoid saved; one backward."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
x, target = torch.randn(8, 4), torch.rand(8, 3)
probs = torch.sigmoid(model(x))
probs += 0.5
loss = -(target * probs.log()).mean()
loss.backward()
