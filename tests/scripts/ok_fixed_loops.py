"""The book's fixes, each a working loop: the command must add nothing and change nothing."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
rnn, head = nn.RNN(3, 8, batch_first=True), nn.Linear(8, 1)
opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.05)
series, targets = torch.randn(2, 50, 3), torch.randn(2, 50, 1)
h = None
for b in range(10):  # hidden state detached at the start of each batch
    if h is not None:
        h = h.detach()
    out, h = rnn(series[:, b * 5:(b + 1) * 5], h)
    loss = F.mse_loss(head(out), targets[:, b * 5:(b + 1) * 5])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("rnn", round(loss.item(), 6))

total = 0.0
for step in range(3):  # a running total kept as a number
    loss = F.mse_loss(head(torch.randn(4, 8)), torch.randn(4, 1))
    total += loss.item()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("total", round(total, 6))

G, D = nn.Linear(2, 2), nn.Linear(2, 1)
bce = nn.BCEWithLogitsLoss()
for step in range(2):  # the discriminator sees fake.detach()
    fake = G(torch.randn(8, 2))
    d_loss = bce(D(torch.randn(8, 2)), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))
    D.zero_grad()
    d_loss.backward()
    g_loss = bce(D(fake), torch.ones(8, 1))
    G.zero_grad()
    g_loss.backward()
print("gan", round(g_loss.item(), 6))

w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
(g,) = torch.autograd.grad(loss, w, retain_graph=True)  # retained: backward may follow
loss.backward()
print("grad then backward", w.grad.tolist(), g.tolist())
