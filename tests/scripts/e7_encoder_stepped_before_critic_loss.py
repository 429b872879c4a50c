"""An encoder trained to fool a critic of its codes, its loss backwarded with the graph kept;
the encoder steps, then the critic's loss (built under the same name) reuses the scores made
before that step. Not two gradients of one loss: the critic's loss is another one, so its values
are built again after the step (moving the step would let the critic's loss train the encoder)."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 2))
critic = nn.Sequential(nn.Linear(2, 6), nn.ReLU(), nn.Linear(6, 1))
dec = nn.Linear(2, 6)
opt_enc = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
opt_critic = torch.optim.Adam(critic.parameters(), lr=1e-2)
for step in range(3):
    x, prior = torch.randn(10, 6), torch.randn(10, 2)
    codes = enc(x)
    scores = critic(torch.tanh(codes))
    loss = F.mse_loss(dec(codes), x) + \
        F.binary_cross_entropy_with_logits(scores, torch.ones_like(scores))
    opt_enc.zero_grad()
    loss.backward(retain_graph=True)
    opt_enc.step()
    opt_critic.zero_grad()
    loss = F.binary_cross_entropy_with_logits(scores, torch.zeros_like(scores)) + \
        F.binary_cross_entropy_with_logits(critic(prior), torch.ones(10, 1))
    loss.backward()  # fails
    opt_critic.step()
print("TRAINED")
