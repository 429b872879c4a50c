"""A trainer object keeps its model and its optimizer as attributes; its step method makes two
losses from one forward, steps after the first backward and then runs the second backward
through the graph of the weights the step changed (a penalty built from one of the forward's
outputs in between). Its fix: the second loss, and what it is made from, built again after the
step."""
import torch
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(5, 6)
        self.head = nn.Linear(6, 2)
        self.aux = nn.Linear(6, 1)

    def forward(self, x):
        h = torch.tanh(self.body(x))
        return self.head(h), self.aux(h)


class Trainer:
    def __init__(self):
        self.net = Net()
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.05)

    def step(self, x, y):
        self.opt.zero_grad()
        pred, aux = self.net(x)
        penalty = aux.pow(2).mean()
        fit = (pred - y).pow(2).mean()
        second = fit + 0.1 * penalty
        fit.backward(retain_graph=True)
        self.opt.step()
        second.backward()  # fails
        self.opt.step()


trainer = Trainer()
for it in range(3):
    trainer.step(torch.randn(8, 5), torch.randn(8, 2))
print("TRAINED")
