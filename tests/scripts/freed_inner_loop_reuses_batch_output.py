"""Per batch, the model's output is computed once; an inner loop draws noisy labels, takes a
gradient of the noisy loss (create_graph=True) for fast weights, and backpropagates a
consistency loss of the fast model each pass. That backward frees the output's graph, which the
next pass's gradient needs again."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
net = nn.Linear(6, 3)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for batch in range(3):
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    opt.zero_grad()
    outputs = net(x)
    for draw in range(2):
        noisy = y[torch.randperm(8)]
        fast_loss = F.cross_entropy(outputs, noisy)
        grads = torch.autograd.grad(fast_loss, net.parameters(), create_graph=True)  # fails
        fast_weight, fast_bias = (p - 0.1 * g for p, g in zip(net.parameters(), grads))
        consistency = F.mse_loss(F.linear(x, fast_weight, fast_bias), outputs.detach())
        consistency.backward()  # frees
    F.cross_entropy(outputs, y).backward()
    opt.step()
print("TRAINED")
