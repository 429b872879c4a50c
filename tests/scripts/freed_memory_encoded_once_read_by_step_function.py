"""A captioning step function: the decoder attends over image features that the training step
is meant to encode from its own batch, but it reads a memory the program encoded once, up front,
to print its shape. The step function, called by the loop, backwards the first step's loss
through that memory's graph; the second call fails at the same line."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
encoder = nn.Linear(6, 8)
decoder = nn.GRUCell(8, 8)
readout = nn.Linear(8, 5)
opt = torch.optim.SGD([*encoder.parameters(), *decoder.parameters(), *readout.parameters()],
                      lr=0.1)


def train_step(images, words):
    features = encoder(images)
    context = torch.zeros(4, 8)
    context[:, :] = memory.mean(0)
    state, loss = features.mean(0).expand(4, 8), 0.0
    for word in words:
        state = decoder(context, state)
        loss = loss + F.cross_entropy(readout(state), word)
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()


memory = encoder(torch.randn(3, 6))  # built
print("memory", tuple(memory.shape))
for step in range(3):
    train_step(torch.randn(3, 6), torch.randint(0, 5, (2, 4)))
print("TRAINED")
