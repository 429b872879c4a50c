"""An iterative refiner fed back two values of its last iteration (its guess and the step that
made it), read by one statement: each iteration's backward meets the graph the last one freed
through both."""
import torch
from torch import nn

torch.manual_seed(0)
refiner = nn.Linear(6, 3)
opt = torch.optim.SGD(refiner.parameters(), lr=0.1)
target = torch.randn(4, 3)
for batch in range(2):
    guess, offset = torch.zeros(4, 3), torch.zeros(4, 3)
    for rounds in range(3):
        step = refiner(torch.cat([guess, offset], 1)) + offset  # read
        guess = torch.tanh(step)
        offset = step
        loss = (guess - target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
