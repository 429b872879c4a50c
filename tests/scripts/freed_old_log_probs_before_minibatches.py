"""A clipped policy update: log-probabilities taken once per batch, before the loop over its
mini-batches, are compared with those of each mini-batch's own forward. The second mini-batch's
backward goes back through the graph that the first one's freed."""
import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Linear(4, 3)
opt = torch.optim.Adam(policy.parameters(), lr=0.01)
for batch in range(2):
    states, actions, adv = torch.randn(6, 4), torch.randint(0, 3, (6,)), torch.randn(6)
    old_logp = torch.log_softmax(policy(states), -1).gather(1, actions[:, None]).squeeze(1)  # made
    for start in range(0, 6, 3):
        mb = slice(start, start + 3)
        logp = torch.log_softmax(policy(states[mb]), -1).gather(1, actions[mb, None]).squeeze(1)
        ratio = torch.exp(logp - old_logp[mb])
        loss = -torch.min(ratio * adv[mb], ratio.clamp(0.8, 1.2) * adv[mb]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print("TRAINED")
