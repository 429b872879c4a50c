"""Notebook 05, with the recurrent state kept on the model: forward reads self.state before it
assigns the new one, so the second chunk's graph reaches the first chunk's."""
import torch
from torch import nn


class CharModel(nn.Module):
    def __init__(self, vocab=10, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.rnn = nn.LSTM(8, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)
        self.state = None

    def forward(self, tokens):
        out, self.state = self.rnn(self.embed(tokens), self.state)  # enters: self.state
        return self.head(out)


torch.manual_seed(0)
model = CharModel()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
text = torch.randint(0, 10, (2, 31))
for start in range(0, 30, 10):
    x, y = text[:, start:start + 10], text[:, start + 1:start + 11]
    loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
    opt.zero_grad()
    loss.backward()
    opt.step()
