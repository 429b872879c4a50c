"""Backward twice in a process started by torch.multiprocessing.spawn: the rank's error comes
back to the parent as ProcessRaisedException."""
import torch
import torch.multiprocessing as mp


def rank(index):
    w = torch.ones(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()


if __name__ == "__main__":
    mp.spawn(rank, nprocs=1)
