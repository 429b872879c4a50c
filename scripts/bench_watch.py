"""What the command's watch adds to each backward call: microseconds per call, median of rounds.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_watch.py [--calls 20000] [--rounds 15]
        [--before DIR] [--notebook] [--train]

Each round times the same tiny backward (a two-node graph: the watch's cost shows most there)
``--calls`` times without the watch, then as many times under it (``Watch(recording=False)``
entered, as the command's first run enters it; ``--recording``: also the ``Watch()`` that records
every call), alternating, so both see the same machine; it prints the median processor
time per call of each and their difference. ``--before DIR``: also an older copy of the
package's first run (the ``autograd_lens`` folder and ``pyproject.toml`` of an older commit,
unpacked in DIR), timed in the same rounds. ``--notebook``: time ``diagnose_on_error`` instead (what ``%load_ext autograd_lens``
enters in a notebook). ``--train``: also the ratio, watched over plain, of training steps of an
MLP with Adam (optimizer steps included), in blocks of 20 steps of the same run, which of the
two runs first alternating (four times as many rounds: a block lasts a few milliseconds); and,
for scale, the same ratio with nothing entered.
:func:`command_costs` gives both figures to ``scripts/bench.py``. A benchmark, not a test: the
number depends on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from autograd_lens.text.on_error import diagnose_on_error
from autograd_lens.run.watch import Watch


def first_run_watch() -> Watch:
    """The watch as the command's first run enters it: calls counted, not recorded."""
    return Watch(recording=False)


def per_call(calls: int, w: torch.Tensor) -> float:
    """Processor seconds per forward-and-backward of a two-node graph (the process's own time:
    other programs on the machine change it less than the clock's)."""
    started = time.process_time()
    for _ in range(calls):
        (w * w).sum().backward()
    return (time.process_time() - started) / calls


def older_watch(folder: str, where: str = "run.watch", name: str = "Watch") -> type:
    """``Watch`` (or ``where``'s ``name``) from the package in ``folder``/autograd_lens,
    imported under another name (from the module's folder, or, in a checkout from before the
    modules had folders, from the package itself)."""
    package = Path(folder) / "autograd_lens"
    spec = importlib.util.spec_from_file_location(
        "autograd_lens_before", package / "__init__.py", submodule_search_locations=[str(package)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["autograd_lens_before"] = module
    spec.loader.exec_module(module)
    if not (package / where.replace(".", "/")).with_suffix(".py").exists():
        where = where.rsplit(".", 1)[-1]
    return getattr(importlib.import_module(f"autograd_lens_before.{where}"), name)


def measure(calls: int, rounds: int,
            watches: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds per call without a watch ("plain") and under each of ``watches``, and
    the median, over rounds, of what each watch added to the round's plain time."""
    w = torch.ones(4, requires_grad=True)
    per_call(calls, w)  # warm-up
    times: dict[str, list[float]] = {"plain": [], **{name: [] for name in watches}}
    made = {name: watch() for name, watch in watches.items()}  # one each, as the command makes
    for _ in range(rounds):
        times["plain"].append(per_call(calls, w))
        for name, watch in made.items():
            with watch:
                times[name].append(per_call(calls, w))
    medians = {name: statistics.median(values) for name, values in times.items()}
    # The median of each round's difference with the plain time of the same round: drifts of
    # the machine between rounds cancel out.
    added = {name: statistics.median(t - p for t, p in zip(times[name], times["plain"]))
             for name in watches}
    return medians, added


def adam_ratio(rounds: int, watch: Any = first_run_watch, block: int = 20) -> float:
    """Median, over rounds, of the processor time of ``block`` training steps of an MLP with Adam
    under ``watch`` over the same steps without it (alternating, in one process). As in the
    command, one watch is made; the clock runs inside it: the command enters it once for the whole
    program, so making, entering and leaving it (see :func:`entering`) is not a cost of a step.
    Nor is what entering it leaves behind (the caches it disturbs just before a block starts):
    the plain block too starts right after the watch was entered and left, so that the two blocks
    differ only in the watch being in place while they run. (Without that, the plain blocks
    alone ran on undisturbed caches: a bias of about 0.4% of a block of 20 steps, measured
    side by side with a block that entered and left it first.)"""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 32), torch.randn(64, 1)

    def steps(under: Any = None) -> float:
        if under is None:  # plain: after the watch was entered and left, as before a watched block
            with made:
                pass
        with under() if under is not None else contextlib.nullcontext():
            started = time.process_time()
            for _ in range(block):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            return time.process_time() - started

    made = watch()
    steps()  # warm-up
    steps(lambda: made)
    ratios = []
    for round_ in range(rounds):  # which runs first alternates: the second of two runs in a row
        if round_ % 2:            # is not always the same one
            after, plain = steps(lambda: made), steps()
        else:
            plain, after = steps(), steps(lambda: made)
        ratios.append(after / plain)
    return statistics.median(ratios)


def entering(watch: Any = first_run_watch, times: int = 2000) -> float:
    """Processor seconds to make, enter and leave ``watch`` once (median of 5 runs of ``times``):
    what a program pays once, at its start and end."""
    def once() -> float:
        started = time.process_time()
        for _ in range(times):
            with watch():
                pass
        return (time.process_time() - started) / times
    return statistics.median(once() for _ in range(5))


def command_costs(calls: int = 20000, rounds: int = 15) -> dict[str, float]:
    """The first run's cost, side by side in one run: microseconds the watch adds per backward
    call (tiny graph, ``calls`` calls a round) and the watched / plain ratio of MLP-with-Adam
    training steps (a round is 20 steps, a few milliseconds: four times as many rounds, for a ratio
    within a percent), and the microseconds of entering and leaving the watch once."""
    _, added = measure(calls, rounds, {"now": first_run_watch})
    return {"watch_added_us_per_call": added["now"] * 1e6,
            "watch_adam_mlp_ratio": adam_ratio(4 * rounds),
            "watch_entered_us": entering() * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--before", metavar="DIR")
    parser.add_argument("--notebook", action="store_true",
                        help="time diagnose_on_error, as %%load_ext autograd_lens enters it")
    parser.add_argument("--recording", action="store_true",
                        help="also the watch that records every call (a program's own Watch())")
    parser.add_argument("--train", action="store_true",
                        help="also the watched / plain ratio of MLP training steps with Adam")
    options = parser.parse_args()
    torch.set_num_threads(1)
    which = ("text.on_error", "diagnose_on_error") if options.notebook else ("run.watch", "Watch")
    watches = {}
    if options.before:  # the older first run (or guard), as the command (or notebook) enters it
        older = older_watch(options.before, *which)
        watches["before"] = older if options.notebook else functools.partial(older, recording=False)
    watches["now"] = diagnose_on_error if options.notebook else first_run_watch
    if options.recording and not options.notebook:
        watches["recording"] = Watch
    medians, added = measure(options.calls, options.rounds, watches)
    plain = medians.pop("plain")
    print(f"plain backward: {plain * 1e6:.1f} us per call (median of {options.rounds} rounds "
          f"of {options.calls} calls)")
    for name, watched in medians.items():
        print(f"under the {'guard' if options.notebook else 'watch'} ({name}): "
              f"{watched * 1e6:.1f} us; added "
              f"{added[name] * 1e6:.1f} us per call (median of the rounds' differences)")
    if options.train:
        rounds = 4 * options.rounds  # a round of training steps is short: more of them
        # The same blocks with nothing entered: how far from 1 the ratio is by chance.
        for name, watch in {"nothing": contextlib.nullcontext, **watches}.items():
            print(f"MLP with Adam, watched ({name}) / plain: "
                  f"{adam_ratio(rounds, watch):.4f} (median of {rounds} rounds)")
        for name, watch in watches.items():
            print(f"entering and leaving the watch ({name}) once: {entering(watch) * 1e6:.0f} us "
                  "(once a program)")


if __name__ == "__main__":
    main()
