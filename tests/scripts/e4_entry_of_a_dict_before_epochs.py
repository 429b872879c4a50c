"""Distillation in rounds: each round a function returns a dict with the teacher's soft targets,
then the student fits them for a few epochs. The teacher is not trained, but its parameters
require grad, so the "soft" entry keeps the teacher's graph, which the first epoch's backward
frees."""
import torch
from torch import nn


def prepare(teacher, n=16):
    inputs = torch.randn(n, 4)
    return {"inputs": inputs, "soft": torch.softmax(teacher(inputs) / 2.0, dim=1)}


torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
student = nn.Linear(4, 3)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
for round_ in range(2):
    batch = prepare(teacher)
    for epoch in range(3):
        logp = torch.log_softmax(student(batch["inputs"]), dim=1)
        loss = -(batch["soft"] * logp).sum(1).mean()  # enters: batch["soft"]
        opt.zero_grad()
        loss.backward()
        opt.step()
print("trained")
