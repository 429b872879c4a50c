"""The program changes its working folder before its backward fails."""
import os

import torch

os.makedirs("outputs", exist_ok=True)
os.chdir("outputs")
w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
loss.backward()
