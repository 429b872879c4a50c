"""One loop, two phases per batch: the first trains a classifier and keeps its probabilities; the
second trains a decoder on the input weighted by them. The first phase's optimizer step changes a
classifier weight that the kept probabilities' graph saved, and the second phase's loss, built
after that step, reads them."""
import torch
from torch import nn

torch.manual_seed(0)
classifier = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 6), nn.Sigmoid())
decoder = nn.Linear(6, 6)
opt_cls = torch.optim.SGD(classifier.parameters(), lr=0.1)
opt_dec = torch.optim.SGD(decoder.parameters(), lr=0.1)
for batch in range(3):
    x, target = torch.randn(4, 6), torch.rand(4, 6)
    for phase in ("classify", "decode"):
        if phase == "classify":
            probs = classifier(x)  # made
            loss = nn.functional.binary_cross_entropy(probs, target)
        else:
            weighted = x * probs  # reads
            loss = (decoder(weighted) - x).pow(2).mean()
        if phase == "classify":
            opt_cls.zero_grad()
            loss.backward(retain_graph=True)
            opt_cls.step()  # step
        else:
            opt_dec.zero_grad()
            loss.backward()
            opt_dec.step()
print("TRAINED")
