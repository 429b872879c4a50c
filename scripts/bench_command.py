"""What the command costs beyond the program's own time, on a long graph: a character-level LSTM
(an ``LSTMCell`` unrolled over 180 characters: a graph of about 3,800 nodes) whose carried state
makes the second chunk's backward fail.

    .venv/bin/python scripts/bench_command.py [--repeats 3]
    .venv/bin/python scripts/bench_command.py --stages


Each repeat runs the program with plain python, then under ``python -m autograd_lens`` (the
first run, the replay under recording, the runs of the edits), in a fresh temporary folder, and
takes the difference of the two wall-clock times; prints the median of the differences and of
each time. Issue 39's line: at most 2 seconds beyond the program's own. A benchmark, not a test:
on a machine busy with other work both times grow, and their difference with them.

``--stages`` runs the command once with its stages timed (from the command's start: when each
began and how long it took; the first run's explaining of the failure, the replay's start, the
moment it reached the failing call, each run of an edit, the wait for the replay and the runs),
and the machine's load average, to see where the time goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 2.0  # seconds of the command's own beyond the program's

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


# The command run with its stages timed: functions of the command wrapped from outside (the
# command itself has no timing of its own), the timeline printed on stdout when it ends.
STAGES = '''\
import sys, time
began = time.perf_counter()
import autograd_lens.text.command as command
import autograd_lens.text.edit_runs as edit_runs
import autograd_lens.text.replay_step as replay_step
import autograd_lens.run.replay_run as replay_run
import autograd_lens.run.failing_call as failing_call
marks = []

def timed(owner, name, label, first_answer=False):
    original = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        answer = original(*args, **kwargs)
        if not first_answer or (answer is not None and not getattr(wrapper, "said", False)):
            wrapper.said = True
            marks.append((start - began, time.perf_counter() - start, label))
        return answer
    setattr(owner, name, wrapper)

timed(command, "_first_run", "the first run: the program, watched, to its end")
timed(failing_call, "finding_of", "the first run explains the failure")
timed(replay_step, "start_replay", "the replay started")
timed(replay_run.Replaying, "failed_at", "the replay reached the failing call", True)
timed(edit_runs, "start_verify", "a run of an edit started")
timed(command, "replay", "waiting for the replay (its evidence), the text amended")
timed(command, "verify", "waiting for the runs of the edits, the edits said")
timed(command.Rerun, "close", "the re-run's process stopped, its folder removed")
try:
    command.main(sys.argv[1:])
finally:
    for start, took, label in sorted(marks):
        print(f"{start:7.2f} s  {took:6.2f} s  {label}")
    print(f"{time.perf_counter() - began:7.2f} s  in all")
'''


def stages() -> str:
    """The command's timeline on the LSTM (see :data:`STAGES`), after the plain run's time."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "char_lstm.py").write_text(PROGRAM)
        load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() \
            else "?"
        alone, _ = timed([sys.executable, "char_lstm.py"], folder)
        env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
        done = subprocess.run([sys.executable, "-c", STAGES, "char_lstm.py"], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=900)
        assert "run and verified" in done.stderr, done.stderr[-3000:]
    return (f"load average {load}; the plain run took {alone:.2f} s; the command, from its "
            f"start (began at, took):\n{done.stdout}")


def timed(command: list[str], folder: str) -> tuple[float, str]:
    """Wall-clock seconds of ``command`` run in ``folder``, and what it wrote on stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)
    return time.perf_counter() - started, done.stderr


def lstm_command_extra(repeats: int = 3) -> dict[str, float]:
    """Median seconds of the plain run, of the command's run, and of their difference."""
    plain, command, extra = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "char_lstm.py").write_text(PROGRAM)
            alone, said = timed([sys.executable, "char_lstm.py"], folder)
            assert "backward through the graph a second time" in said, said[-2000:]
            watched, said = timed([sys.executable, "-m", "autograd_lens", "char_lstm.py"], folder)
            assert "run and verified" in said, said[-3000:]  # diagnosed, replayed, edit run
        plain.append(alone)
        command.append(watched)
        extra.append(watched - alone)
    return {"plain_s": statistics.median(plain), "command_s": statistics.median(command),
            "command_extra_s": statistics.median(extra)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stages", action="store_true",
                        help="run the command once with its stages timed")
    options = parser.parse_args()
    if options.stages:
        print(stages(), end="")
        return 0
    figures = lstm_command_extra(options.repeats)
    print(f"plain run {figures['plain_s']:.1f} s, under the command {figures['command_s']:.1f} s: "
          f"{figures['command_extra_s']:.1f} s beyond the program's own (medians; limit {LIMIT:g} s)")
    return 0 if figures["command_extra_s"] <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
