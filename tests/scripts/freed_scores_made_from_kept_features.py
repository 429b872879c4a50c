"""Features of a fixed batch computed once by an encoder, and a head's scores of them, both
before the loop; every step backwards a loss of the scores. Made again inside the loop, the
scores would read the features, which still hold the graph the first backward freed."""
import torch
from torch import nn

torch.manual_seed(0)
encoder, head = nn.Linear(4, 6), nn.Linear(6, 1)
opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.05)
x, y = torch.randn(10, 4), torch.randn(10, 1)
features = encoder(x).relu()
scores = head(features)  # made
for step in range(3):
    loss = (scores - y).pow(2).mean()  # enters
    loss.backward()  # fails
    opt.step()
    opt.zero_grad()
print("TRAINED")
