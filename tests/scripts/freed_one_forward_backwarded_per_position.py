"""A sequence predictor run once over each whole sequence, then each position's error
backwarded on its own, with one optimizer step per sequence: the first position's backward
frees the one forward's graph, and the second position's fails."""
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 10), nn.Tanh(), nn.Linear(10, 1))
opt = torch.optim.Adam(net.parameters(), lr=0.01)


def make_sequence(length=5):
    seq = torch.randn(length, 3).cumsum(0)
    return seq, seq.sum(1, keepdim=True).sin()


for sequence in range(3):
    seq, target = make_sequence()
    preds = net(seq)  # made
    for t in range(len(seq)):
        err = (preds[t] - target[t]).pow(2).mean()  # enters
        err.backward()  # fails
    opt.step()
    opt.zero_grad()
print("TRAINED")
