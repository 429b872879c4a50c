"""An activation penalty: a wrapper registers forward hooks on the ReLUs of a classifier, the
hooks append each activation to a list on the wrapper, and the wrapper's ``run`` returns the
logits with that list. The list is never emptied: the second step's penalty also sums the first
step's activations, whose graph the first backward freed."""
import torch
from torch import nn
from torch.nn import functional as F


class ActivationTap:
    def __init__(self, model):
        self.model = model
        self.acts = []
        for layer in model:
            if isinstance(layer, nn.ReLU):
                layer.register_forward_hook(self.record)

    def record(self, layer, inputs, output):
        self.acts.append(output)

    def run(self, x):
        logits = self.model(x)
        return logits, self.acts  # enters: self.acts[0]


def objective(tap, x, labels):
    logits, acts = tap.run(x)
    return F.cross_entropy(logits, labels) + 1e-3 * sum(a.abs().mean() for a in acts)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 9), nn.ReLU(), nn.Linear(9, 9), nn.ReLU(), nn.Linear(9, 3))
tap = ActivationTap(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, labels = torch.randn(10, 4), torch.randint(3, (10,))
    loss = objective(tap, x, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("TRAINED")
