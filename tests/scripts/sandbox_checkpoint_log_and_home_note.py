"""A GRU loop that keeps its hidden state across steps (notebook 05's bug) and, each step, saves
a checkpoint, appends to a log and writes a note in the home folder; it fails on its second
backward. Just before that backward it writes the time (ns) to stamp.txt, so that a test can see
that no file was written after the first run failed. With --no-home it writes no note."""
import os
import sys
import time

import torch

torch.manual_seed(0)
note = os.path.join(os.path.expanduser("~"), ".gru_notes", "last.txt")
cell = torch.nn.GRUCell(3, 4)
optimizer = torch.optim.SGD(cell.parameters(), lr=0.1)
h = torch.zeros(2, 4)
for step in range(6):
    h = cell(torch.randn(2, 3), h)  # enters: h
    loss = h.pow(2).mean()
    optimizer.zero_grad()
    if step == 1:
        with open("stamp.txt", "w") as stamp:
            stamp.write(str(time.time_ns()))
    loss.backward()
    optimizer.step()
    torch.save(cell.state_dict(), "ckpt.pt")
    with open("train.log", "a") as log:
        log.write(f"step {step} loss {loss.item():.3f}\n")
    if "--no-home" not in sys.argv:
        os.makedirs(os.path.dirname(note), exist_ok=True)
        with open(note, "w") as handle:
            handle.write(f"step {step}\n")
