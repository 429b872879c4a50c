"""A stack of two recurrent cells keeps each cell's state in a dict under the cell's name and
hands the dict on whole (``y, states = stack(x, states)``); backward runs once every three time
steps, inside an ``if`` of the loop over time. The second chunk's backward goes into the first
chunk's graph through the states: they are detached once a chunk, after its update."""
import torch
from torch import nn

torch.manual_seed(0)


class Cell(nn.Module):
    def __init__(self, name, n_in, n_out):
        super().__init__()
        self.name = name
        self.inp, self.rec = nn.Linear(n_in, n_out), nn.Linear(n_out, n_out, bias=False)

    def forward(self, x, state):
        state = torch.zeros(x.shape[0], self.rec.in_features) if state is None else state
        return torch.tanh(self.inp(x) + self.rec(state))


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.cells = nn.ModuleList([Cell("low", 2, 5), Cell("high", 5, 3)])

    def forward(self, x, states):
        for cell in self.cells:
            x = states[cell.name] = cell(x, states.get(cell.name))
        return x, states


stack = Stack()
optimizer = torch.optim.SGD(stack.parameters(), lr=0.05)
xs, ys = torch.randn(9, 4, 2), torch.randn(9, 4, 3)
states, outputs = {}, []
for t in range(9):
    y, states = stack(xs[t], states)  # read
    outputs.append(y)
    if (t + 1) % 3 == 0:
        loss = (torch.stack(outputs) - ys[t - 2:t + 1]).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()  # fails
        optimizer.step()
        outputs = []  # chunk
print("TRAINED")
