"""A frozen scorer's outputs cached once in a list comprehension (its weights still require grad),
then read back by index in every epoch: a store the loop looks up, never one it should empty."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
scorer = nn.Linear(4, 3)
learner = nn.Linear(4, 3)
opt = torch.optim.SGD(learner.parameters(), lr=0.1)
chunks = [torch.randn(5, 4) for _ in range(3)]
soft = [F.softmax(scorer(c), dim=1) for c in chunks]
for epoch in range(2):
    for i, c in enumerate(chunks):
        loss = F.kl_div(F.log_softmax(learner(c), dim=1), soft[i], reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
print("TRAINED")
