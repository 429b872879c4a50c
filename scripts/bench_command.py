"""What the command costs beyond the program's own time, on a long graph: a character-level LSTM
(an ``LSTMCell`` unrolled over 180 characters: a graph of about 3,800 nodes) whose carried state
makes the second chunk's backward fail.

    .venv/bin/python scripts/bench_command.py [--repeats 3]

Each repeat runs the program with plain python, then under ``python -m autograd_lens`` (the
first run, the replay under recording, the runs of the edits), in a fresh temporary folder, and
takes the difference of the two wall-clock times; prints the median of the differences and of
each time. Issue 39's line: at most 2 seconds beyond the program's own. A benchmark, not a test:
on a machine busy with other work both times grow, and their difference with them.
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
    figures = lstm_command_extra(parser.parse_args().repeats)
    print(f"plain run {figures['plain_s']:.1f} s, under the command {figures['command_s']:.1f} s: "
          f"{figures['command_extra_s']:.1f} s beyond the program's own (medians; limit {LIMIT:g} s)")
    return 0 if figures["command_extra_s"] <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
