"""A router normalises its top-k weights in place by their own norm, the statement written over
two lines (``w /= torch.norm(\\n w, ...)``): the norm's node saved the weights, which the division
then overwrites, and the first backward fails."""
import torch
from torch import nn

torch.manual_seed(0)
router = nn.Linear(6, 4)
optimizer = torch.optim.SGD(router.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 6)
    weights, _ = torch.topk(router(x).softmax(-1), 2, dim=-1)
    weights /= torch.norm(  # write
        weights, p=2, dim=-1, keepdim=True)
    loss = (weights[:, 0] - 0.9).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
