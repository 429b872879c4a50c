"""An encoder is run once on a probe batch before training, unpacking its two outputs
(``memory, summary = encoder(probe)``); the training step, a function, reads the global
``memory`` as the keys of an attention read-out, one slot at a time. The second step goes back into the graph the
first step's backward freed: the value made up front is kept as a constant where it was made."""
import torch

torch.manual_seed(0)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 6)

    def forward(self, x):
        out = torch.tanh(self.proj(x))
        return out, out.mean(0)


encoder = Encoder()
head = torch.nn.Linear(6, 1)


def make_batch(n):
    return torch.randn(n, 6), torch.randn(n, 1)


probe, _ = make_batch(5)
memory, summary = encoder(probe)  # made
print(memory.shape)
optimizer = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.1)


def train_step(batch, target):
    feats, pooled = encoder(batch)
    scores = torch.zeros(len(batch), memory.size(0))
    for i in range(memory.size(0)):  # one memory slot at a time
        scores[:, i] = feats @ memory[i]
    attention = torch.softmax(scores, dim=-1)
    loss = (head(attention @ memory + pooled) - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()


for step in range(3):
    train_step(*make_batch(4))
print("TRAINED")
