"""A loss function runs the critic once over a batch stacked from two halves and splits the
scores into two losses, returned in a dict; the loop backpropagates them in turn. The second
backward goes back into the critic's part of the graph, which the first freed. No name holds
that part at the failure (it was a local of the loss function); the recording shows where it
was made, and under which name."""
import torch
from torch import nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(critic.parameters(), lr=0.1)


def losses(real, fake):
    scores = critic(torch.cat([real, fake]))  # shared
    on_real, on_fake = scores.chunk(2)
    return {"real": (on_real - 1).pow(2).mean(), "fake": on_fake.pow(2).mean()}


for step in range(2):
    terms = losses(torch.randn(5, 4), torch.randn(5, 4))
    opt.zero_grad()
    terms["real"].backward()
    terms["fake"].backward()  # fails
    opt.step()
print("TRAINED")
