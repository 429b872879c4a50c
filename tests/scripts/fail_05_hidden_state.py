"""Notebook 05: an RNN's hidden state carried from one batch into the next."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
series, targets = torch.randn(2, 50, 3), torch.randn(2, 50, 1)


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.RNN(3, 8, batch_first=True)
        self.head = torch.nn.Linear(8, 1)

    def forward(self, x, state=None):
        out, state = self.rnn(x, state)
        return self.head(out), state


model = Tagger()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
h = None
for b in range(10):
    xb, yb = series[:, b * 5:(b + 1) * 5], targets[:, b * 5:(b + 1) * 5]
    pred, h = model(xb, h)  # enters: h
    loss = F.mse_loss(pred, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
