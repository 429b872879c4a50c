"""A channel of a feature map zeroed by an index write, the map convolved, then another channel
set by a second index write: the convolution saved the map between the two writes."""
import torch
from torch import nn

torch.manual_seed(0)
stem, conv = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 2, 1)
features = stem(torch.randn(2, 3, 6, 6))
features[:, 0] = 0.0
mixed = conv(features)  # built
features[:, 1] = 1.0  # write named: features
loss = mixed.mean() + features.mean()
loss.backward()  # fails
