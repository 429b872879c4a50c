"""An orthogonality penalty on an embedding, computed only every other step and kept on the model
to be backpropagated by the update method, which does so whenever it is not None: in the steps
that do not compute it anew, the update backpropagates the old penalty again."""
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 3)
        self.penalty = None
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.1)

    def loss(self, tokens, tags, step):
        if step % 2 == 0:
            gram = self.embed.weight.t() @ self.embed.weight
            self.penalty = (gram - torch.eye(4)).pow(2).sum()
        return nn.functional.cross_entropy(self.head(self.embed(tokens)), tags)

    def update(self, loss):
        self.optimizer.zero_grad()
        loss.backward()
        if self.penalty is not None:
            (0.01 * self.penalty).backward()  # fails
        self.optimizer.step()


torch.manual_seed(0)
tagger = Tagger()
for step in range(4):
    tokens, tags = torch.randint(0, 10, (8,)), torch.randint(0, 3, (8,))
    tagger.update(tagger.loss(tokens, tags, step))
print("TRAINED")
