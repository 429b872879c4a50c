"""A robustness term whose helper also takes autograd.grad of the loss it returns (to move a
random mask), then the step's total, which adds that loss to terms computed before it, is
backpropagated: the helper's grad call freed the returned loss's graph."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.gate = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x, mask=None):
        h = self.body(x)
        return h if mask is None else h * mask

    def importance(self, x):
        return torch.sigmoid(self.gate(x))


def masked_loss(net, x, y):
    mask = torch.rand(x.size(0), 6, requires_grad=True)
    loss = F.mse_loss(net(x, mask), y)
    moved, = torch.autograd.grad(loss, mask)  # freeing
    return loss, moved


net = Gated()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 6), torch.randn(8, 6)
    imp = net.importance(x)
    plain = F.mse_loss(net(x), y)
    gated = F.mse_loss(net(x, imp), y)
    robust, _ = masked_loss(net, x, y)  # carrier
    total = plain + gated + 0.1 * robust + imp.mean()
    opt.zero_grad()
    total.backward()
    opt.step()
print("TRAINED")
