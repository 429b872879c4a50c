"""A generator that maps noise to a code, then the code to a sample; the critic's step scores
the sample as it is, so its backward goes through the generator. The generator's step then
reads the sample again, and the code too (a sparsity penalty): both hold the freed graph, and
the critic's backward entered it through the sample."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
to_code = nn.Sequential(nn.Linear(3, 5), nn.Tanh())
to_sample = nn.Linear(5, 4)
critic = nn.Sequential(nn.Linear(4, 6), nn.ELU(), nn.Linear(6, 1))
g_opt = torch.optim.SGD([*to_code.parameters(), *to_sample.parameters()], lr=0.05)
c_opt = torch.optim.SGD(critic.parameters(), lr=0.05)
real = torch.randn(40, 4) * 0.5 + 1.0
for step in range(3):
    batch = real[step * 8:(step + 1) * 8]
    code = to_code(torch.randn(8, 3))
    sample = to_sample(code)
    c_loss = critic(sample).mean() - critic(batch).mean()
    c_opt.zero_grad()
    c_loss.backward()
    c_opt.step()
    g_loss = -critic(sample).mean() + 0.01 * code.abs().mean()  # enters: sample
    g_opt.zero_grad()
    g_loss.backward()
    g_opt.step()
print("TRAINED")
