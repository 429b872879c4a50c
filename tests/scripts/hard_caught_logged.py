"""The common ending of a training script: log the error with its traceback, exit with 1."""
import logging
import sys

import torch

logging.basicConfig(format="%(levelname)s:%(name)s:%(message)s")
log = logging.getLogger("train")


def train():
    torch.manual_seed(0)
    cell = torch.nn.GRUCell(3, 4)
    h = torch.zeros(2, 4)
    for step in range(3):
        h = cell(torch.randn(2, 3), h)  # enters: h
        loss = h.pow(2).mean()
        loss.backward()
        print("step", step, "done")


try:
    train()
except Exception:
    log.exception("training failed")
    sys.exit(1)
