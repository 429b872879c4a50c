"""An encoder trained first (its optimizer stays alive), then a linear probe fitted by a
function with its own optimizer on codes the encoder computed once: the probe's second step
goes back into the encoder's graph, which its first step freed."""
import torch
from torch import nn

torch.manual_seed(0)
data = torch.randn(32, 6)
encoder = nn.Sequential(nn.Linear(6, 4), nn.Tanh())
decoder = nn.Linear(4, 6)
enc_opt = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
for epoch in range(3):
    loss = (decoder(encoder(data)) - data).pow(2).mean()
    enc_opt.zero_grad()
    loss.backward()
    enc_opt.step()


def fit_probe(codes, labels):
    probe = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    for step in range(4):
        error = (probe(codes).squeeze(1) - labels).pow(2).mean()
        optimizer.zero_grad()
        error.backward()  # fails
        optimizer.step()
    return probe


codes = encoder(data)  # made
probe = fit_probe(codes, torch.randn(32))
print("TRAINED")
