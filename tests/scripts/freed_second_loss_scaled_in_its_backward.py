"""A generator step whose model call returns an adversarial loss, a code-reconstruction loss
and the code, all from one forward; the first loss is backpropagated, then the second, scaled
by its weight in the backward's own statement. The code's name is also an argument of the
model's __init__ (its width)."""
import torch
from torch import nn
from torch.nn import functional as F


class Model(nn.Module):
    def __init__(self, latent=4, code=6):
        super().__init__()
        self.mapping = nn.Linear(latent, code)
        self.generator = nn.Linear(code, 8)
        self.encoder = nn.Linear(8, code)
        self.critic = nn.Linear(8, 1)

    def forward(self, z):
        code = self.mapping(z)  # got
        fake = torch.tanh(self.generator(code))
        rec_loss = F.mse_loss(self.encoder(fake), code)
        adv_loss = F.softplus(-self.critic(fake)).mean()
        return adv_loss, rec_loss, code


torch.manual_seed(0)
model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
rec_weight = 0.5
for step in range(3):
    adv_loss, rec_loss, code = model(torch.randn(5, 4))
    opt.zero_grad()
    adv_loss.backward()
    (rec_loss * rec_weight).backward()  # fails
    opt.step()
print("TRAINED")
