"""Backward twice in children started by the spawn and forkserver methods: a spawned Process
and a forkserver one that fail, catch the error and end; a healthy spawned Process that ends
with its own exit code (the Process objects, the preparation data the program itself asks for,
and torch not imported before the program imports it, as under python); a spawned
ProcessPoolExecutor's worker that fails and catches it; then a spawned Pool whose worker's
error comes back and ends the parent, after a healthy map."""
import concurrent.futures
import multiprocessing
import multiprocessing.spawn
import os
import sys

TORCH_BEFORE = "torch" in sys.modules  # in a spawned child too: the program imports it first

import torch  # noqa: E402


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
    print("healthy", multiprocessing.current_process().name, TORCH_BEFORE, flush=True)
    print(os.environ.get("PYTHONPATH"), sys.path, flush=True)  # as the parent's, as python's
    sys.exit(code)


def square(x):
    w = torch.full((1,), float(x), requires_grad=True)
    (w * w).sum().backward()
    return int(w.grad.item())


if __name__ == "__main__":
    spawn = multiprocessing.get_context("spawn")
    forkserver = multiprocessing.get_context("forkserver")
    for context, target, arg in ((spawn, healthy, 3), (spawn, caught, 1), (forkserver, caught, 2)):
        process = context.Process(target=target, args=(arg,))
        process.start()
        process.join()
        print(process.name, process.exitcode, sorted(vars(process)), flush=True)
    print(sorted(multiprocessing.spawn.get_preparation_data("asked")), flush=True)
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as executor:
        print(executor.submit(square, 5).result(), flush=True)
        executor.submit(caught, 4).result()
    with spawn.Pool(1) as pool:
        print(pool.map(square, [2, 3]), flush=True)
        print(pool.map(twice, [0]))
