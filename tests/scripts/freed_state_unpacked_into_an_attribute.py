"""A GRU classifier that keeps its hidden state on the module: made in __init__ by a method of
its own, then stored back by unpacking the GRU's result (out, self.hidden = ...): the next
batch's forward reads the state whose graph the previous batch's backward freed."""
import torch
from torch import nn

torch.manual_seed(0)


class Tracker(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(5, 6, batch_first=True)
        self.head = nn.Linear(6, 1)
        self.hidden = self.start()

    def start(self):
        return torch.zeros(1, 4, 6)

    def forward(self, x):
        out, self.hidden = self.gru(x, self.hidden)  # enters
        return self.head(out[:, -1]).squeeze(1)


model = Tracker()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in range(3):
    x, y = torch.randn(4, 7, 5), torch.randn(4)
    loss = ((model(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
