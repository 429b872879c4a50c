"""Pages from words: a spiking neuron's membrane potential is carried from one batch into the
next; spikes are made by a custom Function (a surrogate gradient), but the custom node is not
what fails: the carried state is."""
import torch
from torch import nn


class Spike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).float()

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        return grad / (1 + 10 * v.abs()) ** 2


class LIF(nn.Module):
    def __init__(self, n_in, n_out, beta=0.9):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.beta = beta

    def forward(self, x, mem):
        mem = self.beta * mem + self.fc(x)
        spk = Spike.apply(mem - 1.0)
        return spk, mem - spk


torch.manual_seed(0)
layer = LIF(4, 6)
readout = nn.Linear(6, 2)
opt = torch.optim.Adam(list(layer.parameters()) + list(readout.parameters()), lr=1e-3)
mem = torch.zeros(3, 6)
for batch in range(3):
    counts = 0
    for t in range(5):
        spk, mem = layer(torch.randn(3, 4), mem)  # enters: mem
        counts = counts + spk
    loss = readout(counts).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
# page: 05_rnn_hidden_state
