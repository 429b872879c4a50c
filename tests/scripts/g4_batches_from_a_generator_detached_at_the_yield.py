"""A generator yields each batch's prediction from the model it closes over; the loop keeps the
last prediction as `output` and adds it to the next step's loss, so the second backward reaches
the first step's freed graph. Detaching the yielded value where it comes in would cut the only
path from the loss to the weights."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def predictions(steps):
    for _ in range(steps):
        yield model(torch.randn(8, 3))


previous = None
for output in predictions(4):
    loss = output.pow(2).mean()
    if previous is not None:
        loss = loss + 0.1 * previous.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    previous = output
