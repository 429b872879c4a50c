"""Not searched: outputs kept in a list on a state object nested in the trainer
(`self.state.outputs`), never cleared between updates."""
import torch
from torch import nn


class RunState:
    def __init__(self):
        self.step = 0
        self.outputs = []


class Trainer:
    def __init__(self):
        self.net = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 1))
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.state = RunState()

    def training_step(self, x):
        self.state.outputs.append(self.net(x).mean())
        self.state.step += 1

    def on_epoch_end(self):
        loss = torch.stack(self.state.outputs).pow(2).mean()  # enters: self.state.outputs[0]
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


torch.manual_seed(0)
trainer = Trainer()
for epoch in range(2):
    for _ in range(3):
        trainer.training_step(torch.randn(4, 5))
    trainer.on_epoch_end()
# page: 15_rl_buffers
