"""Benchmark of `python -m autograd_lens` (run by hand: python tests/scripts/bench_cli.py).

1. Overhead on a healthy run: `python bench_train.py` against `python -m autograd_lens
   bench_train.py`, interleaved, median wall time of each (whole processes, as a user sees them),
   and the same loop in one process with and without the command's watch installed (CPU time
   of alternating blocks, steadier than wall time on a shared machine).
   Add --processes for the whole-process comparison (slow: 2 x 7 Python starts).
   Add --verify to time what the runs of the edits add to a failing run (the default,
   against --no-verify), and how much of it is beyond the program's own runs.
2. Diagnosis time after a failure on a realistic model: a small LSTM language model whose
   hidden state is carried over (a few thousand graph nodes), timed inside the failing call,
   and the edit computed from it.
"""

import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from autograd_lens.__main__ import _failed_at
from autograd_lens.run.watch import Watch

HERE = Path(__file__).parent
RUNS = 7


def wall(args, check=True):
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=HERE, check=check, capture_output=True)
    return time.perf_counter() - start


def processes():
    plain, command, torch_only, package = [], [], [], []
    for _ in range(RUNS):
        plain.append(wall(["bench_train.py"]))
        command.append(wall(["-m", "autograd_lens", "bench_train.py"]))
        torch_only.append(wall(["-c", "import torch"]))
        package.append(wall(["-c", "import autograd_lens"]))
    a, b = statistics.median(plain), statistics.median(command)
    print(f"whole process, median of {RUNS}: python {a:.3f} s, python -m autograd_lens {b:.3f} s,"
          f" ratio {b / a:.4f}")
    print(f"of which importing the package beyond torch: "
          f"{statistics.median(package) - statistics.median(torch_only):.3f} s")


def alternate(measure, pairs):
    """Medians of ``measure()`` without and with the watch, run in alternation."""
    plain, watched = [], []
    for _ in range(pairs):
        plain.append(measure())
        with Watch():
            watched.append(measure())
    return statistics.median(plain), statistics.median(watched)


def in_process(pairs=30, block=10):
    """Blocks of steps, alternately watched and not, so that the machine's load hits both."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 32), torch.randn(256, 1)

    def steps():
        start = time.process_time()
        for _ in range(block):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return time.process_time() - start

    a, b = alternate(steps, pairs)
    print(f"training step alone, median of {pairs} blocks: {a / block * 1e6:.0f} us, watched "
          f"{b / block * 1e6:.0f} us, ratio {b / a:.4f}")


def per_call(pairs=20, calls=200):
    """What the watch adds to one backward call, on the smallest graph (alternating blocks)."""
    w = torch.ones(1, requires_grad=True)

    def block():
        start = time.process_time()
        for _ in range(calls):
            (w * 2).sum().backward()
        return (time.process_time() - start) / calls

    a, b = alternate(block, pairs)
    print(f"one backward of a 2-node graph, median of {pairs} blocks: {a * 1e6:.1f} us, watched "
          f"{b * 1e6:.1f} us (+{(b - a) * 1e6:.1f} us)")


def diagnosis():
    torch.manual_seed(0)
    embed, lstm = torch.nn.Embedding(100, 64), torch.nn.LSTM(64, 128, num_layers=2)
    head = torch.nn.Linear(128, 100)
    tokens = torch.randint(0, 100, (160, 8))
    watch = Watch()
    state = None
    with watch:
        timings = []
        original = watch.failed

        def timed(error, roots):
            start = time.perf_counter()
            original(error, roots)
            timings.append(time.perf_counter() - start)
        watch.failed = timed
        try:
            for step in range(3):
                x = embed(tokens[:-1])
                for t in range(x.shape[0]):  # one step at a time: a graph of a few thousand nodes
                    out, state = lstm(x[t:t + 1], state)
                    loss = torch.nn.functional.cross_entropy(head(out[0]), tokens[t + 1])
                    total = loss if t == 0 else total + loss
                total.backward()
        except RuntimeError as error:
            failed = _failed_at(error.__traceback__)
    from autograd_lens import walk
    nodes = len(walk(total))
    names = [c.name for c in watch.finding.carriers]
    start = time.perf_counter()
    fixes = watch.finding.pattern.fixes(watch.finding.carriers, failed)
    edit = time.perf_counter() - start
    print(f"diagnosis after the failure: {timings[0]:.3f} s on a graph of {nodes} nodes; "
          f"carriers {names}; the edit: {edit:.3f} s more ({len(fixes)} fixes, "
          f"{sum(len(f.edits) for f in fixes)} edits); together {timings[0] + edit:.3f} s")


def verify_cost(runs=3):
    """What the runs of the edits add to a failing run (the default, against --no-verify), and
    how much of that is the command's own time: what is left once the program's own runs in
    the sandbox (each timed as a plain run of the program to its failure) are taken out."""
    script = "bench_lstm_state_carried.py"
    plain = [wall([script], check=False) for _ in range(runs)]
    bare, verified = [], []
    for _ in range(runs):
        bare.append(wall(["-m", "autograd_lens", "--no-verify", script], check=False))
        verified.append(wall(["-m", "autograd_lens", "--report", "bench_report.json", script],
                             check=False))
    import json

    report = json.loads((HERE / "bench_report.json").read_text())
    (HERE / "bench_report.json").unlink()
    edits = 1 + len(report["alternatives"]) + len(report["failed_attempts"])
    a, b, c = (statistics.median(x) for x in (plain, bare, verified))
    print(f"{script}, median of {runs}: python {a:.3f} s, the command with --no-verify {b:.3f} s, "
          f"by default {c:.3f} s ({edits} edits run): the runs add {c - b:.3f} s, of which "
          f"{c - b - edits * a:.3f} s beyond the program's own runs (each about one plain run)")


if __name__ == "__main__":
    torch.set_num_threads(1)
    diagnosis()
    per_call()
    in_process()
    if "--processes" in sys.argv:
        processes()
    if "--verify" in sys.argv:
        verify_cost()
