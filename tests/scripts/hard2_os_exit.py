"""A program that ends by os._exit (as a forked worker or a watchdog does): no atexit, no
clean-up of the interpreter."""
import os

import torch

w = torch.ones(2, requires_grad=True)
(w * w).sum().backward()
print("trained", flush=True)
os._exit(3)
