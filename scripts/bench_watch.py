"""What the command's watch adds to each backward call: microseconds per call, median of rounds.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_watch.py [--calls 2000] [--rounds 15]
        [--before DIR] [--notebook]

Each round times the same tiny backward (a two-node graph: the watch's cost shows most there)
``--calls`` times without the watch, then as many times under it (``Watch`` entered, as the
command enters it), alternating, so both see the same machine; it prints the median processor
time per call of each and their difference. ``--before DIR``: also an older copy of the
package (the ``autograd_lens`` folder of an older commit, unpacked in DIR), timed in the same
rounds. ``--notebook``: time ``diagnose_on_error`` instead (what ``%load_ext autograd_lens``
enters in a notebook). A benchmark, not a test: the number depends on the machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

from autograd_lens.on_error import diagnose_on_error
from autograd_lens.watch import Watch


def per_call(calls: int, w: torch.Tensor) -> float:
    """Processor seconds per forward-and-backward of a two-node graph (the process's own time:
    other programs on the machine change it less than the clock's)."""
    started = time.process_time()
    for _ in range(calls):
        (w * w).sum().backward()
    return (time.process_time() - started) / calls


def older_watch(folder: str, where: str = "watch", name: str = "Watch") -> type:
    """``Watch`` (or ``where``'s ``name``) from the package in ``folder``/autograd_lens,
    imported under another name."""
    package = Path(folder) / "autograd_lens"
    spec = importlib.util.spec_from_file_location(
        "autograd_lens_before", package / "__init__.py", submodule_search_locations=[str(package)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["autograd_lens_before"] = module
    spec.loader.exec_module(module)
    return getattr(importlib.import_module(f"autograd_lens_before.{where}"), name)


def measure(calls: int, rounds: int,
            watches: dict[str, type]) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds per call without a watch ("plain") and under each of ``watches``, and
    the median, over rounds, of what each watch added to the round's plain time."""
    w = torch.ones(4, requires_grad=True)
    per_call(calls, w)  # warm-up
    times: dict[str, list[float]] = {"plain": [], **{name: [] for name in watches}}
    for _ in range(rounds):
        times["plain"].append(per_call(calls, w))
        for name, watch in watches.items():
            with watch():
                times[name].append(per_call(calls, w))
    medians = {name: statistics.median(values) for name, values in times.items()}
    # The median of each round's difference with the plain time of the same round: drifts of
    # the machine between rounds cancel out.
    added = {name: statistics.median(t - p for t, p in zip(times[name], times["plain"]))
             for name in watches}
    return medians, added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--before", metavar="DIR")
    parser.add_argument("--notebook", action="store_true",
                        help="time diagnose_on_error, as %%load_ext autograd_lens enters it")
    options = parser.parse_args()
    torch.set_num_threads(1)
    which = ("on_error", "diagnose_on_error") if options.notebook else ("watch", "Watch")
    watches = {"before": older_watch(options.before, *which)} if options.before else {}
    watches["now"] = diagnose_on_error if options.notebook else Watch
    medians, added = measure(options.calls, options.rounds, watches)
    plain = medians.pop("plain")
    print(f"plain backward: {plain * 1e6:.1f} us per call (median of {options.rounds} rounds "
          f"of {options.calls} calls)")
    for name, watched in medians.items():
        print(f"under the {'guard' if options.notebook else 'watch'} ({name}): "
              f"{watched * 1e6:.1f} us; added "
              f"{added[name] * 1e6:.1f} us per call (median of the rounds' differences)")


if __name__ == "__main__":
    main()
