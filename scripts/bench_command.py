"""What the command costs, for `make bench` (``scripts/bench.py``): the first run's watch on each
backward call and on training steps, and the whole command's time beyond the program's own.

The watch, as the command's first run enters it (``Watch(recording=False)``): each round times
the same tiny backward (a two-node graph: the watch's cost shows most there) ``calls`` times
without the watch, then as many times under it, alternating, so both see the same machine; the
figure is the median of the rounds' differences, in microseconds per call. Also the ratio,
watched over plain, of training steps of an MLP with Adam (optimizer steps included), in blocks
of 20 steps of the same run, which of the two runs first alternating (four times as many rounds:
a block lasts a few milliseconds), and what entering and leaving the watch once costs. These use
processor time (the process's own: other programs on the machine change it less than the clock's).

The whole command on a long graph: a character-level LSTM (an ``LSTMCell`` unrolled over 180
characters: a graph of about 3,800 nodes) whose carried state makes the second chunk's backward
fail. Each repeat runs the program with plain python, then under ``python -m autograd_lens`` (the
first run, the replay under recording, the runs of the edits), in a fresh temporary folder, and
takes the difference of the two wall-clock times. Issue 39's line: at most 2 seconds beyond the
program's own.

Benchmarks, not tests: the numbers depend on the machine, and on a machine busy with other work
both times of the LSTM grow, and their difference with them.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from autograd_lens.run.watch import Watch

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 2.0  # seconds of the command's own beyond the program's, on the LSTM


def seconds(run, clock=time.perf_counter) -> float:
    """How long ``run()`` took by ``clock`` (wall-clock by default; ``time.process_time`` for
    the process's own processor time)."""
    start = clock()
    run()
    return clock() - start


def first_run_watch() -> Watch:
    """The watch as the command's first run enters it: calls counted, not recorded."""
    return Watch(recording=False)


def per_call(calls: int, w: torch.Tensor) -> float:
    """Processor seconds per forward-and-backward of a two-node graph."""
    def backwards():
        for _ in range(calls):
            (w * w).sum().backward()
    return seconds(backwards, time.process_time) / calls


def watch_added(calls: int, rounds: int) -> float:
    """The median, over rounds, of what the first run's watch added to the round's plain time
    per call (the difference within each round: drifts of the machine between rounds cancel)."""
    w = torch.ones(4, requires_grad=True)
    per_call(calls, w)  # warm-up
    watch, added = first_run_watch(), []  # one watch, as the command makes
    for _ in range(rounds):
        plain = per_call(calls, w)
        with watch:
            added.append(per_call(calls, w) - plain)
    return statistics.median(added)


def adam_ratio(rounds: int, block: int = 20) -> float:
    """Median, over rounds, of the processor time of ``block`` training steps of an MLP with Adam
    under the first run's watch over the same steps without it (alternating, in one process). As
    in the command, one watch is made; the clock runs inside it: the command enters it once for
    the whole program, so making, entering and leaving it (see :func:`entering`) is not a cost of
    a step. Nor is what entering it leaves behind (the caches it disturbs just before a block
    starts): the plain block too starts right after the watch was entered and left, so that the
    two blocks differ only in the watch being in place while they run. (Without that, the plain
    blocks alone ran on undisturbed caches: a bias of about 0.4% of a block of 20 steps, measured
    side by side with a block that entered and left it first.)"""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 32), torch.randn(64, 1)
    watch = first_run_watch()

    def train():
        for _ in range(block):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    def steps(watched: bool) -> float:
        if not watched:  # plain: after the watch was entered and left, as before a watched block
            with watch:
                pass
            return seconds(train, time.process_time)
        with watch:
            return seconds(train, time.process_time)

    steps(False)  # warm-up
    steps(True)
    ratios = []
    for round_ in range(rounds):  # which runs first alternates: the second of two runs in a row
        if round_ % 2:            # is not always the same one
            after, plain = steps(True), steps(False)
        else:
            plain, after = steps(False), steps(True)
        ratios.append(after / plain)
    return statistics.median(ratios)


def entering(times: int = 2000) -> float:
    """Processor seconds to make, enter and leave the first run's watch once (median of 5 runs of
    ``times``): what a program pays once, at its start and end."""
    def enter_and_leave():
        for _ in range(times):
            with first_run_watch():
                pass
    return statistics.median(seconds(enter_and_leave, time.process_time) / times for _ in range(5))


def command_costs(calls: int = 20000, rounds: int = 15) -> dict[str, float]:
    """The first run's cost, side by side in one run: microseconds the watch adds per backward
    call (tiny graph, ``calls`` calls a round) and the watched / plain ratio of MLP-with-Adam
    training steps (a round is 20 steps, a few milliseconds: four times as many rounds, for a ratio
    within a percent), and the microseconds of entering and leaving the watch once."""
    return {"watch_added_us_per_call": watch_added(calls, rounds) * 1e6,
            "watch_adam_mlp_ratio": adam_ratio(4 * rounds),
            "watch_entered_us": entering() * 1e6}


PROGRAM = '''\
import torch
from torch import nn

torch.manual_seed(0)
VOCAB, HIDDEN, STEPS = 40, 64, 180
embed = nn.Embedding(VOCAB, 16)
cell = nn.LSTMCell(16, HIDDEN)
head = nn.Linear(HIDDEN, VOCAB)
params = [*embed.parameters(), *cell.parameters(), *head.parameters()]
opt = torch.optim.Adam(params, lr=1e-3)
text = torch.randint(0, VOCAB, (4, 3 * STEPS + 1))
state = (torch.zeros(4, HIDDEN), torch.zeros(4, HIDDEN))
for chunk in range(3):
    inputs = text[:, chunk * STEPS:(chunk + 1) * STEPS]
    targets = text[:, chunk * STEPS + 1:(chunk + 1) * STEPS + 1]
    loss = 0.0
    for t in range(STEPS):
        state = cell(embed(inputs[:, t]), state)
        loss = loss + nn.functional.cross_entropy(head(state[0]), targets[:, t])
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def run_lstm(args: list[str], folder: str) -> tuple[float, str]:
    """Wall-clock seconds of ``python ARGS`` run in ``folder``, and what it wrote on stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = []
    took = seconds(lambda: done.append(subprocess.run([sys.executable, *args], cwd=folder, env=env,
                                                      capture_output=True, text=True, timeout=900)))
    return took, done[0].stderr


def lstm_command_extra(repeats: int = 3) -> dict[str, float]:
    """Median seconds of the LSTM's plain run, of the command's run, and of their difference."""
    plain, command, extra = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "char_lstm.py").write_text(PROGRAM)
            alone, said = run_lstm(["char_lstm.py"], folder)
            assert "backward through the graph a second time" in said, said[-2000:]
            watched, said = run_lstm(["-m", "autograd_lens", "char_lstm.py"], folder)
            assert "run and verified" in said, said[-3000:]  # diagnosed, replayed, edit run
        plain.append(alone)
        command.append(watched)
        extra.append(watched - alone)
    return {"plain_s": statistics.median(plain), "command_s": statistics.median(command),
            "command_extra_s": statistics.median(extra)}
