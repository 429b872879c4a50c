"""A projection head that keeps every row of its weight on the unit sphere by dividing the rows
by their norms in place, in its own forward, after it has used the weight. The matrix product
saved the weight for the backward; the division moves its version counter first."""
import torch
from torch import nn
from torch.nn import functional as F


class SphereProjection(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) * 0.3)

    def forward(self, feats):
        scores = feats @ self.weight.t()
        with torch.no_grad():
            self.weight.div_(self.weight.norm(dim=1, keepdim=True))  # write: head.weight
        return scores


torch.manual_seed(0)
body = nn.Sequential(nn.Linear(5, 7), nn.SiLU())
head = SphereProjection(7, 4)
opt = torch.optim.SGD([*body.parameters(), *head.parameters()], lr=0.1)
for step in range(3):
    x, labels = torch.randn(6, 5), torch.randint(4, (6,))
    loss = F.cross_entropy(head(body(x)), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
