"""The re-run's process runs the replay and the runs of the edits at once (a core for each):
a failure in one is still reported as its own, each run's result is its own, a run no longer
needed is stopped, and no process outlives the re-run's process; what the process itself
makes on its way up (torch's compiler's cache folder) stays inside its temporary folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from autograd_lens.source.edits import Edit
from autograd_lens.run.replay_run import finish_replay, start_replay
from autograd_lens.run.rerun import Rerun
from autograd_lens.run.verify import finish_verify, start_verify, verdict
from command_runs import processes_below, wait_until
from places import TESTS

SCRIPTS = TESTS / "scripts"

# Fails on its second backward (the freed-graph error), seconds after its first.
SLOW_FAIL = '''\
import time
import torch

torch.manual_seed(0)
w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
time.sleep(5)
loss.backward()
'''


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_replay_and_a_failing_edit_run_at_once_each_reported_and_nothing_left(
        tmp_path, monkeypatch):
    script = tmp_path / "slow_fail.py"
    script.write_text(SLOW_FAIL)
    monkeypatch.chdir(tmp_path)
    pause = "time.sleep(5)"
    assert SLOW_FAIL.splitlines()[7] == pause
    # An edit that ends the program with another error before the pause: its run ends while
    # the replay, started first, still waits for its failing call.
    broken = [Edit(str(script), 8, pause, ("raise ValueError('the edit broke it')",))]
    rerun = Rerun()
    try:
        replaying = start_replay(None, [str(script)], 1, 120, rerun, "freed")
        started = start_verify(broken, None, [str(script)], 1, rerun, 120, None, 0)
        ran = finish_verify(started)
        assert not rerun.done(replaying.run)  # the two ran at once
        found = finish_replay(replaying)
        pgid = rerun.process.pid
        folder = rerun.folder
    finally:
        rerun.close()
    # The edit's failure is its own: another error, not the replay's.
    assert ran["ran"] is True and ran["error"] == "ValueError: the edit broke it"
    assert ran["backward_calls"] == 1 and verdict(ran, 1) == "other_error"
    # The replay is reported as if it had run alone: it failed the same way, at call 2.
    assert found is not None and found["call"] == 2 and found["kind"] == "freed"
    assert wait_until(lambda: _group_gone(pgid), 20), "a process of the re-run outlived it"
    assert not os.path.exists(folder)


def test_a_run_no_longer_needed_is_stopped_and_the_others_go_on(tmp_path, monkeypatch):
    script = tmp_path / "slow_fail.py"
    script.write_text(SLOW_FAIL)
    monkeypatch.chdir(tmp_path)
    line = "loss.backward()"
    fixed = [Edit(str(script), 9, line, ("pass",))]
    # An edit that makes the program run on for minutes: stopped, it must not hold the rest up.
    endless = [Edit(str(script), 9, line, ("time.sleep(600)",))]
    with Rerun() as rerun:
        long_run = start_verify(endless, None, [str(script)], 1, rerun, 900, None, None)
        short_run = start_verify(fixed, None, [str(script)], 1, rerun, 120, None, None)
        assert wait_until(lambda: (Path(rerun.folder) / f"run_{long_run.run}").is_dir(), 60)
        before = time.monotonic()
        rerun.cancel(long_run.run)
        assert wait_until(lambda: long_run.done(), 20), "the stopped run goes on"
        assert not (Path(rerun.folder) / f"run_{long_run.run}").exists()  # its copy removed
        ran = finish_verify(short_run)
        assert time.monotonic() - before < 60
    assert ran["ran"] is True and ran["error"] is None and ran["ended"] is True
    assert ran["backward_calls"] == 1  # the edit removed the second backward


def test_a_run_that_dies_is_reported_and_the_process_serves_the_next(tmp_path, monkeypatch):
    """A run killed from outside (as the system's out-of-memory killer would) is reported as not
    finished, and the run started beside it still gets its own result."""
    script = tmp_path / "slow_fail.py"
    script.write_text(SLOW_FAIL)
    monkeypatch.chdir(tmp_path)
    line = "loss.backward()"
    waiting = [Edit(str(script), 9, line, ("time.sleep(600)",))]
    fixed = [Edit(str(script), 9, line, ("pass",))]
    with Rerun() as rerun:
        doomed = start_verify(waiting, None, [str(script)], 1, rerun, 900, None, None)
        other = start_verify(fixed, None, [str(script)], 1, rerun, 120, None, None)
        ran = finish_verify(other)
        runs = processes_below(rerun.process.pid, deep=False)
        assert len(runs) == 1  # the doomed run, still waiting
        os.kill(runs[0], signal.SIGKILL)
        lost = finish_verify(doomed)
        again = finish_verify(start_verify(fixed, None, [str(script)], 1, rerun, 120, None,
                                           None))
    assert lost["ran"] is False and lost["error"].startswith("the run did not finish")
    assert ran["ran"] is True and ran["error"] is None
    assert again == ran


def test_the_command_leaves_nothing_in_the_temporary_folder(tmp_path):
    """The re-run's process imports torch's compiler while the first run goes on, which makes
    its cache folder in the temporary folder: the sandbox's own, removed with it, not the
    user's."""
    work, temp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    temp.mkdir()
    (work / "fail.py").write_text((SCRIPTS / "fail_01_backward_twice.py").read_text())
    env = dict(os.environ, TMPDIR=str(temp), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "autograd_lens", "--report", "report.json",
                           "fail.py"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads((work / "report.json").read_text())
    assert report["verified"] is not None and report["verified"]["verdict"] == "gone", report
    assert sorted(p.name for p in temp.iterdir()) == []


CAUGHT_THEN_FAILS = '''\
import torch

torch.manual_seed(0)
w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
try:
    loss.backward()  # fails; caught: the program goes on
except RuntimeError:
    pass
h = w * 2
for step in range(2):
    h = h * w  # enters: h
    h.sum().backward()
'''


def test_a_replay_started_at_a_caught_failure_gives_way_to_the_later_ones(tmp_path):
    """The replay starts at the moment a backward fails, while the program goes on; when the
    program caught that error and fails again at another call, the replay is of the later
    failure (the one diagnosed last), and the edits are run against it."""
    (tmp_path / "caught.py").write_text(CAUGHT_THEN_FAILS)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "autograd_lens", "--report", "report.json",
                           "caught.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    # Calls that returned: the first backward, then the loop's first; the third call fails.
    assert report["recorded"]["call"] == 3 and report["recorded"]["kind"] == "freed", report
    assert report["verified"]["verdict"] == "gone", report


def test_a_replay_asked_for_before_the_process_is_ready_runs_once_it_is(tmp_path, monkeypatch):
    """At the failure the replay is asked for without waiting for the re-run's process to have
    imported torch (that happens inside the program's backward call): the order waits in the
    process's input and the replay runs once it is ready, as if asked for then."""
    script = tmp_path / "fail.py"
    script.write_text((SCRIPTS / "fail_01_backward_twice.py").read_text())
    monkeypatch.chdir(tmp_path)
    with Rerun() as rerun:  # just started: it imports torch now
        replaying = start_replay(None, [str(script)], 1, 120, rerun, "freed", waiting=False)
        assert replaying.run == 0
        found = finish_replay(replaying)
    assert found is not None and found["call"] == 2 and found["kind"] == "freed"
