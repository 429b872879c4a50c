"""Two-pass training by hand: a helper object nudges every weight up its gradient in place
(under no_grad) between the first backward and the second, and the second backward reuses the
first pass's loss, kept with retain_graph=True; the nudge is undone before the real update.
Its fix: the loss built again right after the nudge."""
import torch
from torch import nn

torch.manual_seed(0)


class Nudger:
    def __init__(self, params, radius=0.05):
        self.params, self.radius, self.kept = list(params), radius, []

    @torch.no_grad()
    def up(self):
        self.kept = [self.radius * p.grad.sign() for p in self.params]
        for p, d in zip(self.params, self.kept):
            p.add_(d)

    @torch.no_grad()
    def back(self):
        for p, d in zip(self.params, self.kept):
            p.sub_(d)


net = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
nudger = Nudger(net.parameters())
for it in range(3):
    x, y = torch.randn(6, 3), torch.randn(6, 1)
    pred = net(x)
    loss = (pred - y).pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)
    nudger.up()
    opt.zero_grad()
    loss.backward()  # fails
    nudger.back()
    opt.step()
print("TRAINED")
