"""A scorer is applied, in each step, to a prompt feature encoded once at the top of the
program and to a learned feature; the first step's backward frees the prompt's encoder graph."""
import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Embedding(10, 4), nn.Tanh())
scorer = nn.Linear(4, 1)
prompt = encoder(torch.tensor([1, 2])).mean(0, keepdim=True)
learned = torch.zeros(1, 4, requires_grad=True)
optimizer = torch.optim.SGD([learned], lr=0.1)
for step in range(3):
    loss = (scorer(prompt) - scorer(learned)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
