"""An LSTM tagger that keeps its (h, c) state on the module, trained by a function the model is
handed to: the second batch's forward reads the state whose graph the first batch's backward
freed. The state is reached at the failure only through the function's argument."""
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 5, batch_first=True)
        self.head = nn.Linear(5, 2)
        self.state = (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))

    def forward(self, x):
        out, self.state = self.lstm(x, self.state)  # enters
        return self.head(out)


def train(net, batches, optimizer):
    for x, y in batches:
        loss = nn.functional.cross_entropy(net(x).reshape(-1, 2), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()  # fails
        optimizer.step()


torch.manual_seed(0)
tagger = Tagger()
batches = [(torch.randn(2, 4, 3), torch.randint(0, 2, (2, 4))) for _ in range(3)]
train(tagger, batches, torch.optim.SGD(tagger.parameters(), lr=0.1))
print("TRAINED")
