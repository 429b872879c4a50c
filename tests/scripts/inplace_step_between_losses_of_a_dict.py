"""One forward returns a dict of losses for a critic and a generator; the loop adds the critic's
total to the dict, steps the critic, and then takes the generator's loss from the same dict,
which went through the critic's weights that the step just changed."""
import torch
from torch import nn

torch.manual_seed(0)
maker, critic = nn.Linear(3, 4), nn.Linear(4, 1)
opt_maker = torch.optim.SGD(maker.parameters(), lr=0.05)
opt_critic = torch.optim.SGD(critic.parameters(), lr=0.05)


def losses_of(noise, real):
    made = maker(noise)
    return {"real": nn.functional.softplus(-critic(real)).mean(),
            "fake": nn.functional.softplus(critic(made.detach())).mean(),
            "maker": nn.functional.softplus(-critic(made)).mean(), "size": made.pow(2).mean()}


for step in range(3):
    noise, real = torch.randn(6, 3), torch.randn(6, 4)
    losses = losses_of(noise, real)  # built
    losses["critic"] = losses["real"] + losses["fake"]  # added
    opt_critic.zero_grad()
    losses["critic"].backward()
    opt_critic.step()  # stepped
    opt_maker.zero_grad()
    losses["total"] = losses["maker"] + 0.1 * losses["size"]
    losses["total"].backward()  # fails
    opt_maker.step()
    print(step, round(losses["critic"].item(), 3))
print("TRAINED")
