"""A recurrence written in Python keeps each layer's state as a row of one tensor and updates it
in place from itself (``state[layer] = cell(layer, inp, state[layer])``, on two lines): the cell's linear layer saves
the row it reads, and the write then changes it. The value is computed first, then written into
a copy of the state."""
import torch

torch.manual_seed(0)
inputs = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)])
recurrent = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)])
head = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(list(inputs.parameters()) + list(recurrent.parameters()) + list(head.parameters()), lr=0.1)


def cell(layer, inp, h):
    return torch.tanh(inputs[layer](inp) + recurrent[layer](h))


for step in range(3):
    xs = torch.randn(4, 3)
    state = torch.zeros(2, 3)
    for x in xs:
        inp = x
        for layer in range(2):
            state[layer] = cell(layer, inp,  # written
                                state[layer])
            inp = state[layer]
    loss = head(state[-1]).pow(2).sum()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
