"""Two decoders trained first through both critics; then each critic is fitted by one helper
called twice, on the decoders' outputs that the decoders' backward already went through."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
dec_x, dec_y = nn.Linear(3, 4), nn.Linear(3, 4)
crit_x, crit_y = nn.Linear(4, 1), nn.Linear(4, 1)
opt_dec = torch.optim.SGD(list(dec_x.parameters()) + list(dec_y.parameters()), lr=0.1)
opt_crit = torch.optim.SGD(list(crit_x.parameters()) + list(crit_y.parameters()), lr=0.1)


def fit_critic(critic, true, made):
    loss = F.softplus(-critic(true)).mean() + F.softplus(critic(made)).mean()
    loss.backward()
    return loss


for step in range(3):
    z = torch.randn(5, 3)
    true_x, true_y = torch.randn(5, 4), torch.randn(5, 4)
    made_x = dec_x(z)
    made_y = dec_y(z)
    loss_dec = F.softplus(-crit_x(made_x)).mean() + F.softplus(-crit_y(made_y)).mean()
    opt_dec.zero_grad()
    loss_dec.backward()
    opt_dec.step()
    opt_crit.zero_grad()
    loss_x = fit_critic(crit_x, true_x, made_x)
    loss_y = fit_critic(crit_y, true_y, made_y)
    opt_crit.step()
print("TRAINED")
