"""What the command costs, for `make bench` (``scripts/bench.py``): the first run's watch on each
backward call and on training steps, and the whole command's time beyond the program's own.

The watch, as the command's first run enters it (``Watch(recording=False)``), measured in pairs of
short blocks: a block of :data:`BLOCK` tiny backward calls (a two-node graph: the watch's cost
shows most there) without the watch, and one under it, which of the two runs first alternating
from pair to pair; the figure is the median, over the pairs, of the difference per call, in
microseconds. A block lasts about two milliseconds, shorter than the machine's drifts, and a
thousand pairs make the median steady to a few tenths of a microsecond (fifteen rounds of 20,000
calls each, the earlier way, gave medians from -0.6 to 5.3 us on the same code). The same
measurement of a wrapper that only passes the call on, with the engine's own parameters, is the
floor: what the method reads where nothing is added. The same two are also timed call by call
(:func:`alone_per_call`: inside the watch, the engine's function set in turns to the watch's
wrapper and to torch's own, each tiny backward call timed alone, over :data:`CALLS` pairs): far
steadier (five rounds on one machine: 2.1 to 2.8 us for the watch, -0.25 to 0.02 us for the
floor, where blocks gave 3.8 to 5.8 and -1.2 to 0.5), but blind to what the watch costs the code
that runs between backward calls (the forward that builds the next graph), which blocks count;
the target is the blocks' figure. Also the ratio, watched over plain, of
training steps of an MLP with Adam (optimizer steps included), in pairs of blocks of
:data:`BLOCK` steps, and what entering and leaving the watch once costs. Processor time (the
process's own: other programs on the machine change it less than the clock's); the watch is
entered before the clock starts, as the command enters it once for the whole program, and the
plain block of a pair also starts right after the watch was entered and left.

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


BLOCK = 20  # backward calls, or training steps, in one block of a pair


class PassThrough:
    """A wrapper of the engine's function that only passes the call on, with the engine's own
    parameters (as the watch's wrapper takes them): the floor of :func:`watch_added`."""

    def __enter__(self) -> "PassThrough":
        self.original = original = torch.autograd._engine_run_backward

        def through(tensors, grad_tensors, keep_graph, create_graph, inputs,
                    allow_unreachable=True, accumulate_grad=True):
            return original(tensors, grad_tensors, keep_graph, create_graph, inputs,
                            allow_unreachable, accumulate_grad=accumulate_grad)
        torch.autograd._engine_run_backward = through
        return self

    def __exit__(self, *exc_info) -> None:
        torch.autograd._engine_run_backward = self.original


def in_pairs(block, wrapper, pairs: int) -> list[tuple[float, float]]:
    """(plain, wrapped) processor seconds of ``block()`` for each of ``pairs`` pairs, which of
    the two runs first alternating; the clock of the wrapped one runs inside ``wrapper``, and
    the plain one starts right after ``wrapper`` was entered and left."""
    def plain() -> float:
        with wrapper:
            pass
        return seconds(block, time.process_time)

    def wrapped() -> float:
        with wrapper:
            return seconds(block, time.process_time)

    plain(), wrapped()  # warm-up
    found = []
    for pair in range(pairs):
        if pair % 2:
            after, before = wrapped(), plain()
        else:
            before, after = plain(), wrapped()
        found.append((before, after))
    return found


def added_per_call(wrapper, pairs: int) -> float:
    """Median, over ``pairs`` pairs of blocks of :data:`BLOCK` tiny backward calls, of what
    ``wrapper`` added per call, in seconds."""
    w = torch.ones(4, requires_grad=True)

    def backwards():
        for _ in range(BLOCK):
            (w * w).sum().backward()
    return statistics.median((after - before) / BLOCK
                             for before, after in in_pairs(backwards, wrapper, pairs))


CALLS = 20_000  # pairs of single backward calls of alone_per_call


def alone_per_call(wrapper, calls: int = CALLS) -> float:
    """Median, over ``calls`` pairs of tiny backward calls, of what ``wrapper`` added per call,
    in seconds: inside ``wrapper``, the engine's function is its wrapper's for one call of a pair
    and torch's own for the other (which first alternating), each call timed alone."""
    w = torch.ones(4, requires_grad=True)
    autograd, clock = torch.autograd, time.perf_counter_ns
    original = autograd._engine_run_backward
    differences = []
    with wrapper:
        wrapped = autograd._engine_run_backward
        try:
            for call in range(calls + 1):  # the first pair warms up
                took = {}
                for engine in ((original, wrapped) if call % 2 else (wrapped, original)):
                    autograd._engine_run_backward = engine
                    loss = (w * w).sum()
                    start = clock()
                    loss.backward()
                    took[engine is wrapped] = clock() - start
                differences.append(took[True] - took[False])
        finally:
            autograd._engine_run_backward = wrapped  # as the wrapper left it, for its exit
    return statistics.median(differences[1:]) / 1e9


def watch_added(pairs: int) -> float:
    """What the first run's watch adds per tiny backward call (see :func:`added_per_call`);
    one watch, as the command makes."""
    return added_per_call(first_run_watch(), pairs)


def adam_ratio(pairs: int) -> float:
    """Median, over ``pairs`` pairs of blocks of :data:`BLOCK` training steps of an MLP with
    Adam, of the processor time under the first run's watch over the same steps without it (see
    :func:`in_pairs`; one watch, as the command makes: making, entering and leaving it, see
    :func:`entering`, is not a cost of a step)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 32), torch.randn(64, 1)

    def train():
        for _ in range(BLOCK):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return statistics.median(after / before
                             for before, after in in_pairs(train, first_run_watch(), pairs))


def entering(times: int = 2000) -> float:
    """Processor seconds to make, enter and leave the first run's watch once (median of 5 runs of
    ``times``): what a program pays once, at its start and end."""
    def enter_and_leave():
        for _ in range(times):
            with first_run_watch():
                pass
    return statistics.median(seconds(enter_and_leave, time.process_time) / times for _ in range(5))


def command_costs(pairs: int = 1000, calls: int = CALLS) -> dict[str, float]:
    """The first run's cost, side by side in one run: microseconds the watch adds per backward
    call (``pairs`` pairs of blocks: as many calls under it as :data:`BLOCK` times ``pairs``),
    and the same for a wrapper that only passes the call on (the floor); both again timed call
    by call (``calls`` pairs, see :func:`alone_per_call`); the watched / plain
    ratio of MLP-with-Adam training steps (a quarter as many pairs: a block of steps lasts a few
    milliseconds); and the microseconds of entering and leaving the watch once."""
    return {"watch_added_us_per_call": watch_added(pairs) * 1e6,
            "passthrough_added_us_per_call": added_per_call(PassThrough(), pairs) * 1e6,
            "watch_alone_us_per_call": alone_per_call(first_run_watch(), calls) * 1e6,
            "passthrough_alone_us_per_call": alone_per_call(PassThrough(), calls) * 1e6,
            "watch_adam_mlp_ratio": adam_ratio(pairs // 4),
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
