"""A robustness term: a helper moves a random mask along autograd.grad of the masked loss a few
times, and the last call's grad also frees the graph of the loss it returns; the step's total,
which adds that loss to terms computed before the helper ran, is then backpropagated."""
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


def _loss_and_grad(net, x, y, mask):
    loss = F.mse_loss(net(x, mask), y)
    moved, = torch.autograd.grad(loss, mask)  # freeing
    return loss, moved


def worst_mask_loss(net, x, y, steps=2):
    mask = torch.rand(x.size(0), 6, requires_grad=True)
    for _ in range(steps):
        _, moved = _loss_and_grad(net, x, y, mask)
        with torch.no_grad():
            mask += 0.1 * moved.sign()
    loss, _ = _loss_and_grad(net, x, y, mask)
    return loss


net = Gated()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 6), torch.randn(8, 6)
    imp = net.importance(x)
    plain = F.mse_loss(net(x), y)
    gated = F.mse_loss(net(x, imp + (1 - imp) * torch.rand_like(imp)), y)
    robust = worst_mask_loss(net, x, y)  # carrier
    total = plain + gated + 0.1 * robust + imp.mean()
    opt.zero_grad()
    total.backward()
    opt.step()
print("TRAINED")
