"""Feature matching: the targets are a dict of a fixed teacher's activations, and a dict of
their means, both computed once before training from a reference batch. The teacher's weights
still require grad, so each target carries the teacher's graph, and the second step's backward
goes through it again."""
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)

teacher = nn.ModuleDict({"low": nn.Linear(12, 20), "high": nn.Linear(20, 8)})


def activations(x):
    found = {}
    for name, layer in teacher.items():
        x = layer(x) if name == "high" else torch.relu(layer(x))
        found[name] = x
    found["probs"] = torch.softmax(x, dim=1)  # kept for plots, not trained on
    return found


reference = torch.randn(16, 12)
targets = activations(reference)  # made
centres = {k: v.mean(0) for k, v in targets.items()}  # centred

student = nn.ModuleDict({"low": nn.Linear(12, 20), "high": nn.Linear(20, 8)})
optimizer = torch.optim.SGD(student.parameters(), lr=0.05)
for step in range(4):
    low = torch.relu(student["low"](reference))
    high = student["high"](low)
    outputs = {"low": low, "high": high}
    loss = sum(F.mse_loss(outputs[k] - outputs[k].mean(0), targets[k] - centres[k]) for k in outputs)
    optimizer.zero_grad()
    loss.backward()  # fails
    optimizer.step()
print("TRAINED")
