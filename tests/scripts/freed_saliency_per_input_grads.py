"""A two-input model trained each epoch, then a saliency check that takes the gradient of one
class's scores with respect to each input in turn with autograd.grad: the first input's call
frees the graph the second input's call needs."""
import torch
from torch import nn


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.left, self.right = nn.Linear(3, 4), nn.Linear(2, 4)
        self.head = nn.Linear(8, 2)

    def forward(self, a, b):
        return self.head(torch.tanh(torch.cat([self.left(a), self.right(b)], dim=1)))


def saliency(model, inputs):
    inputs = [x.detach().requires_grad_() for x in inputs]
    outputs = model(*inputs)
    scores = [s for s in outputs[:, 0]]
    maps = []
    for x in inputs:
        maps.append(torch.autograd.grad(scores, x)[0].abs())  # fails
    return maps


torch.manual_seed(0)
model = TwoInputs()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
probe = [torch.randn(5, 3), torch.randn(5, 2)]
for epoch in range(3):
    a, b, y = torch.randn(8, 3), torch.randn(8, 2), torch.randint(0, 2, (8,))
    loss = nn.functional.cross_entropy(model(a, b), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    maps = saliency(model, probe)
print("TRAINED")
