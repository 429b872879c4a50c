"""First-order meta-learning with a head initialised from class prototypes: the prototypes come
from the encoder, and the first inner gradient (taken with respect to the encoder's last layer,
a parameter) goes through them and frees their graph. The later inner gradients, taken with
respect to the adapted copies, do not reach it; the outer loss, through the head, does."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(5, 8), nn.ReLU())
last = nn.Linear(8, 8)
meta_opt = torch.optim.Adam([*encoder.parameters(), *last.parameters()], lr=1e-3)


def embed(x, weight, bias):
    return F.linear(encoder(x), weight, bias)


for episode in range(2):
    support, labels = torch.randn(6, 5), torch.arange(3).repeat(2)
    query = torch.randn(6, 5)
    centres = torch.stack([embed(support, last.weight, last.bias)[labels == c].mean(0)
                           for c in range(3)])
    head_w, head_b = 2 * centres, -centres.pow(2).sum(1)  # head
    fast = [last.weight, last.bias]
    for inner in range(3):
        inner_loss = F.cross_entropy(F.linear(embed(support, *fast), head_w, head_b), labels)
        grads = torch.autograd.grad(inner_loss, fast)  # inner
        fast = [(p - 0.1 * g).detach().requires_grad_() for p, g in zip(fast, grads)]
    meta_opt.zero_grad()
    outer = F.cross_entropy(F.linear(embed(query, *fast), head_w, head_b), labels)
    outer.backward()  # fails
    meta_opt.step()
print("TRAINED")
