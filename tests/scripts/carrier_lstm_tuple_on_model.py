"""Not searched before: an LSTM's (h, c) kept on the model as a tuple and fed back in each
batch; the carrier's form is a tuple."""
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)
        self.out = nn.Linear(4, 2)
        self.memory = None

    def forward(self, x):
        y, self.memory = self.lstm(x, self.memory)  # enters: self.memory
        return self.out(y)


torch.manual_seed(0)
model = Tagger()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for batch in range(2):
    opt.zero_grad()
    model(torch.randn(2, 5, 3)).pow(2).mean().backward()
    opt.step()
# page: 05_rnn_hidden_state
# form: tuple
