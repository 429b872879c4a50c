"""A recurrent submodule keeps its state as a tensor attribute, read back by name through a
helper; the model reaches it as `self.recurrent`. The state is the carrier, not the module."""
import torch
from torch import nn


class Stateful(nn.Module):
    def recall(self, name):
        return getattr(self, name)


class Recurrent(Stateful):
    def __init__(self, size=4):
        super().__init__()
        self.cell, self.mix = nn.Linear(size, size), nn.Linear(size, size, bias=False)
        self.h = torch.zeros(2, size)

    def forward(self, x):
        self.h = torch.tanh(self.cell(x) + self.mix(self.recall("h")))
        return self.h


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.recurrent, self.head = Recurrent(), nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.recurrent(x))  # enters: self.recurrent.h


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 05_rnn_hidden_state
