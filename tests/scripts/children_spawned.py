"""Backward twice in children started by the spawn and forkserver methods: a spawned Process
and a forkserver one that fail, catch the error and end; a healthy spawned Process that ends
with its own exit code (the Process objects and the preparation data the program itself asks
for, as under python); then a spawned Pool whose worker's error comes back and ends the parent,
after a healthy map."""
import multiprocessing
import multiprocessing.spawn
import sys

import torch


def twice(seed):
    torch.manual_seed(seed)
    w = torch.ones(3, requires_grad=True)
    loss = (w * w).sum()  # enters: loss
    loss.backward()
    loss.backward()
    return seed


def caught(seed):
    try:
        twice(seed)
    except RuntimeError as error:
        print("caught in", multiprocessing.current_process().name, str(error)[:29], flush=True)


def healthy(code):
    print("healthy", multiprocessing.current_process().name, flush=True)
    sys.exit(code)


def square(x):
    w = torch.full((1,), float(x), requires_grad=True)
    (w * w).sum().backward()
    return int(w.grad.item())


if __name__ == "__main__":
    spawn, forkserver = multiprocessing.get_context("spawn"), multiprocessing.get_context("forkserver")
    for context, target, arg in ((spawn, healthy, 3), (spawn, caught, 1), (forkserver, caught, 2)):
        process = context.Process(target=target, args=(arg,))
        process.start()
        process.join()
        print(process.name, process.exitcode, sorted(vars(process)), flush=True)
    print(sorted(multiprocessing.spawn.get_preparation_data("asked")), flush=True)
    with spawn.Pool(1) as pool:
        print(pool.map(square, [2, 3]), flush=True)
        print(pool.map(twice, [0]))
