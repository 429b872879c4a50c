"""A character model whose output layer is its embedding's weight, transposed, with max_norm on
the embedding: each time step's lookup renormalises rows of that weight in place, after the
previous step's product saved it. No optimizer step runs before the failing backward."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
chars, width = 12, 6


class TiedCharModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(chars, width, max_norm=0.5)
        self.mix = nn.GRUCell(width, width)

    def forward(self, text):
        state, scores = torch.zeros(text.shape[0], width), []
        for t in range(text.shape[1]):
            state = self.mix(self.table(text[:, t]), state)  # write: self.table.weight
            scores.append(state @ self.table.weight.T)  # built
        return torch.stack(scores, 1)


model = TiedCharModel()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    text = torch.randint(0, chars, (5, 7))
    scores = model(text)
    loss = F.cross_entropy(scores[:, :-1].reshape(-1, chars), text[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
