"""A feature buffer made once and refilled each step with zero_() then copy_(); a head reads
it, so every refill changes what the head's node saved. Its fix: refill a copy (there is no
out-of-place copy_)."""
import torch
from torch import nn

torch.manual_seed(0)
encoder, head = nn.Linear(4, 3), nn.Linear(3, 1)
opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.1)
frames, goals = torch.randn(3, 6, 4), torch.randn(3, 6, 1)
feats = torch.empty(6, 3)
for epoch in range(2):
    loss = 0.0
    for frame, goal in zip(frames, goals):
        feats.zero_()
        feats.copy_(torch.relu(encoder(frame)))  # write: feats
        loss = loss + (head(feats) - goal).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
