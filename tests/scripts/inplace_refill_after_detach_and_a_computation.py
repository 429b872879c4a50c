"""A preallocated trace buffer is refilled at each step of an unrolled rollout: detached in place
(``trace.detach_()``), then, after the new value is computed on a line of its own, overwritten
with ``trace.copy_(decay)``; the previous step's loss term saved the buffer. The copy that keeps
the saved tensor goes before the whole run of in-place calls, the detach included."""
import torch

torch.manual_seed(0)
rates = torch.nn.Linear(3, 2)
gain = torch.nn.Parameter(torch.ones(2))
optimizer = torch.optim.SGD(list(rates.parameters()) + [gain], lr=0.05)
trace = torch.zeros(2)
for epoch in range(3):
    mu = rates(torch.randn(5, 3)).mean(0)
    loss = 0
    for t in range(3):
        trace.detach_()  # first
        decay = torch.exp(-mu * (t + 1))
        trace.copy_(decay)  # fails
        loss = loss + (trace * gain).sum().pow(2)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("TRAINED")
