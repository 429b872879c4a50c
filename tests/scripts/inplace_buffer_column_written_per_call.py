"""A classifier head scores features against a fixed table of class codes kept as a buffer, and
writes a learned code for the "other" class into the table's first column on every call; the
head runs twice a step, so the second call's write changes the table that the first call's
product saved."""
import torch
from torch import nn

torch.manual_seed(0)


class CodeHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 4)
        self.register_buffer("codes", torch.randn(4, 5))

    def forward(self, feats, other_code=None):
        z = self.embed(feats)
        if other_code is not None:
            self.codes[:, 0] = other_code  # written
        return z @ self.codes  # scored


head, other = CodeHead(), nn.Linear(6, 4)
opt = torch.optim.SGD([*head.parameters(), *other.parameters()], lr=0.1)
for step in range(3):
    a, b = torch.randn(3, 6), torch.randn(3, 6)
    code = other(a.mean(0))
    labels = torch.randint(0, 5, (3,))
    loss = nn.functional.cross_entropy(head(a, code), labels) + \
        nn.functional.cross_entropy(head(b, code), labels)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
