"""The wrong tensor: two losses read the same logits; the second backward goes through the
logits' graph that the first one freed. The logits, not the second loss, carry it."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))
x, labels = torch.randn(10, 6), torch.randint(0, 3, (10,))
logits = encoder(x)
ce = F.cross_entropy(logits, labels)
entropy = -(F.softmax(logits, -1) * F.log_softmax(logits, -1)).sum(-1).mean()
ce.backward()
entropy.backward()  # enters: logits
# page: 02_two_losses_one_forward
