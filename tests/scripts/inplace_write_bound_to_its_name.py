"""A helper scales feature directions to unit length and binds the in-place result back to the
name it writes (``d = d.div_(d.norm(...))``): the norm's node saved ``d``, which the division then
changes, and the first backward fails. Written out of place on the same line, the name holds the
new tensor as it held the written one."""
import torch

torch.manual_seed(0)
encoder = torch.nn.Linear(5, 3)
head = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.1)


def directions(x):
    d = torch.tanh(encoder(x))
    d = d.div_(d.norm(dim=-1, keepdim=True) + 1e-6)  # write
    return d


for step in range(3):
    x, y = torch.randn(8, 5), torch.randn(8, 1)
    loss = (head(directions(x)) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
