"""A diversity term computed (and backpropagated) by a helper after the main loss's backward, on the same embeddings."""
import torch
from torch import nn


def diversity_step(embedded, weight):
    similarity = embedded @ embedded.t()
    off_diagonal = similarity - torch.diag(torch.diagonal(similarity))
    penalty = weight * off_diagonal.pow(2).mean()
    penalty.backward()  # page: 02_two_losses_one_forward
    return penalty.item()


torch.manual_seed(5)
embed = nn.Sequential(nn.Linear(4, 6), nn.Tanh())
score = nn.Linear(6, 1)
opt = torch.optim.SGD(list(embed.parameters()) + list(score.parameters()), lr=0.05)
for step in range(2):
    items, ratings = torch.randn(5, 4), torch.randn(5, 1)
    opt.zero_grad()
    embedded = embed(items)
    (score(embedded) - ratings).pow(2).mean().backward()
    diversity_step(embedded, 0.1)
    opt.step()
