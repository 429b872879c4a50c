"""In place, one backward: `probs += 1e-6` writes into the output that sigmoid saved. No
earlier backward call went through this graph."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, target = torch.randn(8, 4), torch.rand(8, 3)
for step in range(3):
    probs = torch.sigmoid(model(x))
    probs += 1e-6  # write: probs
    loss = -(target * probs.log()).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: mental_model
