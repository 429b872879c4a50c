"""Codes an encoder made once are handed to a small trainer's fit method, which backpropagates
through them batch by batch: the second batch meets the encoder graph the first one freed."""
import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.head = nn.Linear(3, 1)
        self.opt = torch.optim.SGD(self.head.parameters(), lr=0.1)

    def fit(self, inputs):
        for part in inputs.split(4):  # read
            loss = self.head(part).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


torch.manual_seed(0)
encoder = nn.Linear(5, 3)
codes = encoder(torch.randn(8, 5))  # got
Trainer().fit(codes)
