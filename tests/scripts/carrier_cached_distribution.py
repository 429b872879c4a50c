"""A distribution built once before the loop caches its logits lazily, with the graph of the
first step; every later step reuses them. No line of the program assigns the logits: it holds
them through the distribution, which is the name to give (and to make again in the loop)."""
import torch
from torch import nn
from torch.distributions import Categorical

torch.manual_seed(0)
prior_net = nn.Linear(3, 4)
prior = Categorical(probs=torch.softmax(prior_net(torch.ones(3)), -1))
opt = torch.optim.SGD(prior_net.parameters(), lr=0.1)
for step in range(2):
    actions = torch.randint(0, 4, (8,))
    loss = -prior.log_prob(actions).mean()  # enters: prior
    opt.zero_grad()
    loss.backward()
# page: 13_tensor_outside_loop
