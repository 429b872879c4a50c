"""A detector head whose output columns are read as views: a box loss on the first columns,
then, column pair by column pair, a loss on the offsets and a rescaling of that pair in place.
Every view shares the output's version counter, so each write also moves the version the box
loss saved; the error reports the last offsets' loss, whose save came just before the last write."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
head = nn.Linear(8, 8)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
scale = torch.rand(16, 2) + 0.5
for it in range(2):
    feats, boxes, offsets_true = torch.randn(16, 8), torch.randn(16, 2), torch.randn(16, 6)
    out = head(feats)
    box_loss = F.smooth_l1_loss(out[:, :2], boxes)
    offsets, offset_loss = out[:, 2:], 0.0
    for k in range(3):
        pair = slice(2 * k, 2 * k + 2)
        offset_loss = offset_loss + F.smooth_l1_loss(offsets[:, pair], offsets_true[:, pair])  # built
        offsets[:, pair] = offsets[:, pair] * scale  # write: offsets
    opt.zero_grad()
    (box_loss + offset_loss).backward()  # fails
    opt.step()
print("TRAINED")
