"""A hand-written gated cell that keeps its last hidden state on itself, to start the next
batch from it: the state is made in the loop over time steps and kept after it. The second
batch's backward reaches the first batch's freed graph through that kept state."""
import torch
from torch import nn

torch.manual_seed(0)


class GatedCell(nn.Module):
    def __init__(self, width=5):
        super().__init__()
        self.gate = nn.Linear(2 * width, width)
        self.mix = nn.Linear(width, width)
        self.last = None

    def forward(self, xs):
        state = self.last if self.last is not None else torch.zeros(xs.shape[1], xs.shape[2])
        for x in xs:
            z = torch.sigmoid(self.gate(torch.cat([x, state], dim=1)))
            state = z * state + (1 - z) * torch.tanh(self.mix(x))  # made
        self.last = state  # kept
        return state


cell = GatedCell()
head = nn.Linear(5, 1)
opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.1)
for batch in range(3):
    xs, y = torch.randn(4, 6, 5), torch.randn(6, 1)
    loss = (head(cell(xs)) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
