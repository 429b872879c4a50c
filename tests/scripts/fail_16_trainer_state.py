"""Notebook 16, in a plain trainer class of the script (not an nn.Module): a running centre kept
as an attribute of the trainer and updated with history inside its step method."""
import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.encoder = nn.Linear(4, 4)
        self.optimizer = torch.optim.Adam(self.encoder.parameters(), lr=1e-3)
        self.center = torch.zeros(4)

    def step(self, x):
        z = self.encoder(x).tanh()
        loss = ((z - self.center) ** 2).mean()  # enters: self.center
        self.center = 0.9 * self.center + 0.1 * z.mean(0)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


def main():
    torch.manual_seed(0)
    trainer = Trainer()
    for _ in range(3):
        trainer.step(torch.randn(8, 4))


if __name__ == "__main__":
    main()
