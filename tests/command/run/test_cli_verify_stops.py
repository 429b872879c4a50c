"""The runs of the edits end with the command: a signal to the command while an edited program
trains in the sandbox (Ctrl-C, a job scheduler's SIGTERM, a closed terminal's SIGHUP, a kill -9)
stops every process the command started, removes the temporary folder, and (but for SIGKILL,
which nothing can catch) ends the command as the signal would, without a traceback of the
command's own.

Each case starts the command in a session of its own, waits until the sandbox runs the edited
program (its run folder exists, after the replay's), notes every process the command started, then signals it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from command_runs import processes_below, wait_until
from places import TESTS

SCRIPT = TESTS / "scripts" / "hard_verify_slow.py"


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _run_started(temp: Path) -> bool:
    """The edited program's run has started: run_0 is the replay's, run_1 the first edit's."""
    return any((folder / "run_1").is_dir() for folder in temp.iterdir())


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_a_signal_to_the_command_stops_every_run_and_removes_the_folder(tmp_path, signum):
    work, temp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    temp.mkdir()
    shutil.copy(SCRIPT, work)
    env = dict(os.environ, TMPDIR=str(temp), OMP_NUM_THREADS="1")
    command = subprocess.Popen(
        [sys.executable, "-m", "autograd_lens", SCRIPT.name], cwd=work, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert wait_until(lambda: _run_started(temp) or command.poll() is not None, 240)
        assert command.poll() is None, command.communicate()
        started = processes_below(command.pid)
        assert len(started) >= 2  # the sandbox's process and the run it forked
        assert [p.name[:21] for p in temp.iterdir()] == ["autograd_lens_verify_"]
        command.send_signal(signum)
        out, err = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == -signum, err
    assert wait_until(lambda: not any(_running(p) for p in started), 20), "a run is still running"
    assert wait_until(lambda: list(temp.iterdir()) == [], 20)  # the temporary folder is removed
    steps = (work / "steps.txt").read_text()
    time.sleep(1.5)
    assert (work / "steps.txt").read_text() == steps  # nothing trains on in the user's folder
    assert len(steps.splitlines()) == 1  # the first run's one step: the runs wrote in the copy
    if signum == signal.SIGKILL:
        return
    # The program's own traceback only: none of the command's, no KeyboardInterrupt.
    assert err.count("Traceback (most recent call last)") == 1
    assert "KeyboardInterrupt" not in err and f"autograd_lens{os.sep}" not in err
    assert "the runs of the suggested edits were stopped" in err
    assert "were not run (the runs of the edits were stopped)" in err
