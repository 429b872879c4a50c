"""A classifier scored once on the whole batch; the logits are then cut into four parts, and
each part's loss gets its own backward (keeping the graph for the next part) and its own
optimizer step. The second part's backward meets weights the first step changed in place.
Building the logits again inside the loop changes nothing: the parts come from the loop's
header, which read the old logits once."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 3))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
xs, ys = torch.randn(32, 6), torch.randint(3, (32,))
for epoch in range(2):
    logits = net(xs)
    for part, labels in zip(logits.chunk(4), ys.chunk(4)):
        loss = F.cross_entropy(part, labels)
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()
print("TRAINED")
