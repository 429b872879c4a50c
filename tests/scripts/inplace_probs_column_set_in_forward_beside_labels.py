"""A sigmoid's output gets its first column set in forward (probs[:, 0] = 1.0); the labels, of
the same shape, had their first column set the same way once before the loop."""
import torch

torch.manual_seed(0)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)

    def forward(self, x):
        probs = torch.sigmoid(self.lin(x))  # built
        probs[:, 0] = 1.0  # write: the first class is always on
        return probs


net = Head()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(5, 3)
y = torch.rand(5, 4)
y[:, 0] = 1.0
for epoch in range(3):
    out = net(x)
    loss = ((out - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
