"""Skip-gram scores from a table with max_norm whose weight also scores every word (tied):
each lookup renormalises rows of the weight in place, inside torch, after the scores of the
word before saved that weight. Its fix: the scores read a copy of the weight."""
import torch
from torch import nn
from torch.nn import functional as F


class SkipGram(nn.Module):
    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(9, 4, max_norm=0.5)

    def forward(self, centres):
        logits = []
        for centre in centres:
            vec = self.words(centre)  # write: self.words.weight
            logits.append(F.linear(vec, self.words.weight))
        return torch.stack(logits)


torch.manual_seed(0)
model = SkipGram()
opt = torch.optim.SGD(model.parameters(), lr=0.5)
centres = [torch.tensor([0, 3]), torch.tensor([5, 7]), torch.tensor([1, 8])]
context = torch.tensor([[2, 4], [6, 1], [3, 0]])
for step in range(2):
    logits = model(centres)
    loss = F.cross_entropy(logits.reshape(-1, 9), context.reshape(-1))
    opt.zero_grad()
    loss.backward()  # fails
    opt.step()
print("TRAINED")
