"""Errors at a spawned child's first backward call: a hook's own KeyError, whose traceback the
child prints to its output, then the in-place error (a result saved for backward modified in
place), which ends the child."""
import multiprocessing
import sys
import traceback

import torch


def hook_error(_):
    w = torch.ones(3, requires_grad=True)
    w.register_hook(lambda grad: {}["missing"])
    try:
        (w * 2).sum().backward()
    except KeyError:
        traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()


def inplace(_):
    w = torch.ones(3, requires_grad=True)
    y = w.exp()  # exp saves its result for backward
    y.add_(1)
    y.sum().backward()


if __name__ == "__main__":
    spawn = multiprocessing.get_context("spawn")
    for target in (hook_error, inplace):
        process = spawn.Process(target=target, args=(0,))
        process.start()
        process.join()
        print(process.name, process.exitcode, flush=True)
