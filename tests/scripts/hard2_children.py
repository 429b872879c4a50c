"""Backward twice in children the program starts: a Pool worker (fork start method), whose
error comes back to the parent and ends it, after a forked child (os.fork) that fails, catches
it and ends by os._exit as forked children do."""
import multiprocessing
import os

import torch


def twice(seed):
    torch.manual_seed(seed)
    w = torch.ones(3, requires_grad=True)
    loss = (w * w).sum()  # enters: loss
    loss.backward()
    loss.backward()
    return seed


if __name__ == "__main__":
    pid = os.fork()
    if pid == 0:
        try:
            twice(1)
        except RuntimeError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        print(pool.map(twice, [0]))
