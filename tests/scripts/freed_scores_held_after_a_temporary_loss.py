"""Two groups of losses over one forward: the first group's sum is backpropagated as a
temporary, then the second group's, computed before that call, meets the freed graph."""
import torch

torch.manual_seed(0)
body = torch.nn.Linear(4, 6)
head = torch.nn.Linear(6, 3)
optimizer = torch.optim.SGD(list(body.parameters()) + list(head.parameters()), lr=0.1)


def train_step(x):
    hidden = torch.tanh(body(x))  # got
    scores = head(hidden)
    fit = (scores - 1).pow(2).mean()
    spread = hidden.var(0).sum()
    optimizer.zero_grad()
    (scores.abs().mean() + 0.5 * scores.mean()).backward()
    total = fit + spread
    total.backward()  # held
    optimizer.step()


for step in range(2):
    train_step(torch.randn(5, 4))
