"""`python -m autograd_lens` under hard use, round two (issue 42): a loop that skips the
failing batch, errors of the program's own raised inside backward, a Ctrl-C during the
diagnosis, an error that ends the program after the diagnosis was said.

Each script (tests/scripts/hard2_*.py) runs under the command and under plain `python`; what
the program itself prints must be the same.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

SCRIPTS = Path(__file__).parent / "scripts"
SAID = "autograd_lens: this backward reaches a graph that an earlier call already went through."
SKIPPED = "hard2_skipped_batches.py"
OURS = f"autograd_lens{os.sep}"


def run(*args: str, command: tuple[str, ...] | None = ("--no-verify",),
        cwd: Path = SCRIPTS) -> tuple[int, str, str]:
    """`python -m autograd_lens COMMAND ARGS`, or (``command`` None) `python ARGS`."""
    prefix = [sys.executable] + ([] if command is None else ["-m", "autograd_lens", *command])
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(prefix + list(args), cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)
    return done.returncode, done.stdout, done.stderr


def line_of(script: str, text: str) -> int:
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The scripts under the command and under plain python, two at a time."""
    folder = tmp_path_factory.mktemp("hard2")
    jobs = {
        "skipped": ((("--report", str(folder / "skipped.json"), SKIPPED)), ("--no-verify",)),
        "skipped plain": ((SKIPPED,), None),
        "hooks": (("hard2_hook_errors.py",), ("--no-verify",)),
        "hooks verifying": (("hard2_hook_errors.py",), ()),
        "hooks plain": (("hard2_hook_errors.py",), None),
        "ends": (("hard2_ends_through_finally.py",), ("--no-verify",)),
        "ends verifying": (("hard2_ends_through_finally.py",), ()),
        "ends plain": (("hard2_ends_through_finally.py",), None),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run, *args, command=command)
                   for name, (args, command) in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
    results["folder"] = folder
    return results


def test_a_skipped_batch_is_diagnosed_in_full_once_then_in_one_line(runs):
    code, out, err = runs["skipped"]
    assert (code, out) == runs["skipped plain"][:2] == (0, "skipped 199\n")
    assert err.count(SAID) == 1, err[:3000]
    line = line_of(SKIPPED, "loss.backward()")
    again = [f"autograd_lens: the same error at {SKIPPED}:{line} again, {n} "
             f"time{'s' if n != 1 else ''} so far." for n in range(1, 199)]
    assert [x for x in err.splitlines() if "the same error at" in x] == again
    assert len(err.splitlines()) < 300
    report = json.loads((runs["folder"] / "skipped.json").read_text())
    assert report["carriers"][0]["name"] == "h"
    assert report["repeated"] == [{"file": str(SCRIPTS / SKIPPED), "line": line, "again": 198}]


def test_the_report_is_written_at_the_failure_and_after_the_replay_only(tmp_path, monkeypatch):
    """Not once per failure: at the first, after the replay remade it, and at the end."""
    from autograd_lens import telling
    from autograd_lens.__main__ import main

    writes = []
    original = telling.Teller.write
    monkeypatch.setattr(telling.Teller, "write", lambda self: (writes.append(1),
                                                               original(self)))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    report = tmp_path / "report.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["--report", str(report), "--no-verify", str(SCRIPTS / SKIPPED)])
    assert code == 0 and json.loads(report.read_text())["repeated"][0]["again"] == 198
    assert len(writes) <= 3, len(writes)


def test_a_caught_failure_after_the_first_costs_under_a_millisecond(tmp_path):
    """The median time of the 198 caught failures after the first (each timed by the program
    itself, from its backward call to its except clause), under the command and under plain
    python, one after the other: the command adds at most a millisecond."""
    medians = {}
    for name, command in (("plain", None), ("command", ("--no-verify",))):
        timings = tmp_path / f"{name}.json"
        code, _, err = run(SKIPPED, str(timings), command=command)
        assert code == 0, err
        medians[name] = statistics.median(json.loads(timings.read_text()))
    assert medians["command"] - medians["plain"] <= 1e-3, medians


@pytest.mark.parametrize("how", ["hooks", "hooks verifying"])
def test_errors_raised_inside_backward_show_no_frame_of_the_command(runs, how):
    """A hook's KeyError printed by the program, a custom Function's ValueError printed by
    Python at exit: byte for byte as under python (the watch's wrapper is not in them)."""
    code, out, err = runs[how]
    assert (code, out, err) == runs["hooks plain"]
    assert "KeyError: 'missing'" in err and err.endswith("ValueError: the custom backward refuses\n")
    assert OURS not in err


def test_ctrl_c_during_the_diagnosis_is_raised_at_the_programs_call():
    """A KeyboardInterrupt that lands while the watch explains the failure: raised from the
    program's backward call, with no frame of the watch, its context the error, unchanged."""
    from autograd_lens.watch import Watch

    def interrupted(finding, frame):
        raise KeyboardInterrupt

    w = torch.ones(2, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    with pytest.raises(KeyboardInterrupt) as caught:
        with Watch(on_failure=interrupted):
            loss.backward()
    shown = "".join(traceback.format_exception(caught.value))
    assert OURS not in shown, shown
    error = caught.value.__context__
    assert type(error) is RuntimeError and str(error).startswith(
        "Trying to backward through the graph a second time")
    assert caught.value.__cause__ is None


@pytest.mark.parametrize("how", ["ends", "ends verifying"])
def test_the_summary_is_last_when_the_error_ends_the_program(runs, how):
    """Said at the failure (the error passed a try/finally), then Python's traceback; the
    last lines are the carrier, its line, the fix and the page."""
    code, out, err = runs[how]
    assert (code, out) == runs["ends plain"][:2] and code == 1
    script = "hard2_ends_through_finally.py"
    tail = err.splitlines()[-4:]
    error_at = err.index("RuntimeError: Trying to backward through the graph a second time")
    assert err.index(SAID) < error_at < err.index("autograd_lens, in short:")
    assert tail[0] == (f"autograd_lens, in short: h, entering at {script}:"
                       f"{line_of(script, '# enters: h')}, carries in the graph that the "
                       f"backward at {script}:{line_of(script, '.backward()')} could not go "
                       "through.")
    assert tail[1].startswith("Fix: detach the state at the start of each batch")
    assert tail[2].startswith("Edit: ")
    assert tail[3].startswith("See: https://") and "05_rnn_hidden_state" in tail[3]
