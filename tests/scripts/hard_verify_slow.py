"""Notebook 05's bug in a slow training loop: the re-run of the fixed program trains on (a step
every second), writing into the working folder, until it is stopped. Each run of the
program writes its process id to pids.txt, and each step a line to steps.txt."""
import os
import time

import torch

with open("pids.txt", "a") as pids:
    pids.write(f"{os.getpid()}\n")
torch.manual_seed(0)
cell = torch.nn.GRUCell(3, 4)
h = torch.zeros(2, 4)
for step in range(100):
    h = cell(torch.randn(2, 3), h)  # enters: h
    h.pow(2).mean().backward()
    with open("steps.txt", "a") as steps:
        steps.write(f"{os.getpid()} {step}\n")
    time.sleep(1.0)
