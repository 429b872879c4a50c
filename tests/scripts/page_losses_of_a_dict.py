"""Two heads over one shared output; the loop walks over their losses and backpropagates each on its own."""
import torch
from torch import nn

torch.manual_seed(4)
body = nn.Sequential(nn.Linear(5, 9), nn.ReLU())
mask, edge = nn.Linear(9, 3), nn.Linear(9, 1)
params = [*body.parameters(), *mask.parameters(), *edge.parameters()]
opt = torch.optim.SGD(params, lr=0.1)
x, labels, edges = torch.randn(6, 5), torch.tensor([0, 1, 2, 0, 1, 2]), torch.randn(6)
for step in range(2):
    opt.zero_grad()
    shared = body(x)
    terms = {"mask": nn.functional.cross_entropy(mask(shared), labels),
             "edge": (edge(shared).squeeze(1) - edges).pow(2).mean()}
    for name, term in terms.items():
        term.backward()  # page: 02_two_losses_one_forward
    opt.step()
