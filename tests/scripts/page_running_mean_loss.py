"""The running mean of the batch losses is what gets backpropagated, to train on a steadier number."""
import torch
from torch import nn

torch.manual_seed(7)
net = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.02)
data = torch.randn(40, 3)
target = data.sum(1, keepdim=True)
mean_loss = None
for step in range(5):
    batch, wanted = data[8 * step:8 * step + 8], target[8 * step:8 * step + 8]
    loss = nn.functional.l1_loss(net(batch), wanted)
    mean_loss = loss if mean_loss is None else mean_loss + (loss - mean_loss) / (step + 1)
    opt.zero_grad()
    mean_loss.backward()  # page: 06_accumulating_loss
    opt.step()
