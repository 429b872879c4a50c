"""Two losses of one forward, each given its own backward, once: the second backward finds the
graph freed. One backward of their sum is the fix; its run has one backward call where the first
run had two, and the program ends after it."""
import torch

torch.manual_seed(0)
net = torch.nn.Linear(4, 2)
out = net(torch.randn(16, 4))
loss_a = out[:, 0].pow(2).mean()
loss_b = out[:, 1].abs().mean()
loss_a.backward()
loss_b.backward()
print(net.weight.grad.norm() > 0)
