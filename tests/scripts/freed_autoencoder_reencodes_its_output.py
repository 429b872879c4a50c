"""An autoencoder, trained by one optimizer, whose encoder also reads back what its decoder made
(a consistency loss); that loss is backpropagated first, then the reconstruction loss of the same
forward: two losses over one forward, no critic and no generator."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
encode = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3))
decode = nn.Sequential(nn.Linear(3, 10), nn.Tanh(), nn.Linear(10, 6))
judge = nn.Linear(6, 2)  # a fixed classifier of the outputs, trained by nobody here
opt = torch.optim.Adam([*encode.parameters(), *decode.parameters()], lr=1e-2)
data = torch.randn(40, 6)

for start in range(0, 40, 10):
    x = data[start:start + 10]
    code = encode(x)
    rebuilt = decode(code)
    consistency = F.mse_loss(encode(rebuilt), code) + judge(rebuilt).pow(2).mean()
    opt.zero_grad()
    consistency.backward()
    reconstruction = F.mse_loss(rebuilt, x)  # rebuilt
    reconstruction.backward()  # fails
    opt.step()
