"""An unrolled forward writes each step's row into one tensor (out[t:t + 1] = ...), reading the
row before it through a linear layer, which saved that row: the write of the next row changes
what the layer saved, and the first backward fails, before any optimizer step."""
import torch

torch.manual_seed(0)


class Unrolled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        out = x.repeat(2, 1)
        for t in range(1, out.shape[0]):
            out[t:t + 1] = torch.tanh(self.lin(out[t - 1:t]))  # built, write
        return out


net = Unrolled()
opt = torch.optim.Adam(net.parameters(), lr=0.01)
for step in range(3):
    x = torch.randn(1, 3)
    loss = net(x).pow(2).sum()
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
