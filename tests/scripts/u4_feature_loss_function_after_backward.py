"""A generator step in two parts: the adversarial loss is backwarded, then a function that
backwards by itself matches the statistics of the discriminator's features of the fake batch,
features whose graph the first backward went through."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
gen = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 5))
body, head = nn.Sequential(nn.Linear(5, 6), nn.LeakyReLU(0.2)), nn.Linear(6, 1)
opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)


def moment_matching(fake_feats, real_feats, weight=0.1):
    gap = (fake_feats.mean(0) - real_feats.mean(0)).pow(2).sum()
    loss = weight * gap
    loss.backward()
    return loss.item()


for step in range(3):
    real = torch.randn(8, 5)
    fake = gen(torch.randn(8, 3))
    feats = body(fake)
    logits = head(feats)
    opt_g.zero_grad()
    adv = F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))
    adv.backward()
    with torch.no_grad():
        real_feats = body(real)
    moment_matching(feats, real_feats)  # enters: feats
    opt_g.step()
print("TRAINED")
