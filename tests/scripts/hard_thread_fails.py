"""Notebook 05's bug in a worker thread: threading prints the thread's traceback, and the
program goes on and ends with 0."""
import threading

import torch


def train():
    torch.manual_seed(0)
    cell = torch.nn.GRUCell(3, 4)
    h = torch.zeros(2, 4)
    for step in range(3):
        h = cell(torch.randn(2, 3), h)  # enters: h
        h.pow(2).mean().backward()


worker = threading.Thread(target=train, name="trainer")
worker.start()
worker.join()
print("main thread done")
