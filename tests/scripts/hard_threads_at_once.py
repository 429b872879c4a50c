"""Notebook 05's bug in one thread while another thread is inside a healthy backward (held
there by a hook until the first thread's backward has failed)."""
import threading

import torch

inside, failed = threading.Event(), threading.Event()


def hold(grad):
    inside.set()
    failed.wait(60)
    return grad


def healthy():
    w = torch.ones(3, requires_grad=True)
    y = w * 2
    y.register_hook(hold)
    y.sum().backward()


def buggy():
    inside.wait(60)
    try:
        torch.manual_seed(0)
        cell = torch.nn.GRUCell(3, 4)
        h = torch.zeros(2, 4)
        for step in range(3):
            h = cell(torch.randn(2, 3), h)  # enters: h
            h.pow(2).mean().backward()
    finally:
        failed.set()


threads = [threading.Thread(target=healthy, name="healthy"),
           threading.Thread(target=buggy, name="buggy")]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("both threads done")
