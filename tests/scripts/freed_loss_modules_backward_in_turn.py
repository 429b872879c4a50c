"""Loss modules that record their loss in the forward and run its backward in a method of their
own, which passes the caller's flag on as retain_graph; two such modules of two kinds watch the
same features, and the training loop calls each one's backward in turn without the flag: the
second goes through the features the first one's backward freed."""
import torch
from torch import nn

torch.manual_seed(0)


class MeanProbe(nn.Module):
    def forward(self, features):
        self.loss = features.mean(0).pow(2).sum()
        return features

    def backward(self, keep_graph=False):
        self.loss.backward(retain_graph=keep_graph)  # freed


class SpreadProbe(nn.Module):
    def forward(self, features):
        self.loss = (features.std(0) - 1).pow(2).sum()
        return features

    def backward(self, keep_graph=False):
        self.loss.backward(retain_graph=keep_graph)


body = nn.Sequential(nn.Linear(4, 6), nn.Tanh())
mean_probe, spread_probe = MeanProbe(), SpreadProbe()
head = nn.Sequential(body, mean_probe, spread_probe)
opt = torch.optim.SGD(body.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    head(torch.randn(8, 4))
    mean_probe.backward()  # called
    spread_probe.backward()  # fails
    opt.step()
print("TRAINED")
