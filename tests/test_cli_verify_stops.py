"""`--verify`'s re-run ends with the command: a signal to the command while the re-run trains
(a kill, a job scheduler's SIGTERM, a closed terminal's SIGHUP, Ctrl-C) stops the re-run and all
it started, removes its temporary copy, and ends the command as the signal would, without a
traceback of the command's own.

Each case starts the command in a session of its own, waits until the re-run runs the program
(its process id is the second in pids.txt), then signals the command.
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

SCRIPT = Path(__file__).parent / "scripts" / "hard_verify_slow.py"


def _pids(folder: Path) -> list[int]:
    path = folder / "pids.txt"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _wait(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_to_the_command_stops_the_rerun_and_removes_its_copy(tmp_path, signum):
    work, temp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    temp.mkdir()
    shutil.copy(SCRIPT, work)
    env = dict(os.environ, TMPDIR=str(temp), OMP_NUM_THREADS="1")
    command = subprocess.Popen(
        [sys.executable, "-m", "autograd_lens", "--verify", SCRIPT.name], cwd=work, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # the replay runs first, in a process of its own, then the edited program's re-run
        assert _wait(lambda: (len(_pids(work)) >= 3 and any(
            p.name.startswith("autograd_lens_verify_") for p in temp.iterdir()))
            or command.poll() is not None, 240)
        assert command.poll() is None, command.communicate()
        rerun = _pids(work)[-1]
        assert _running(rerun) and [p.name[:21] for p in temp.iterdir()] == [
            "autograd_lens_verify_"]
        command.send_signal(signum)
        out, err = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == -signum, err
    assert _wait(lambda: not _running(rerun), 10), "the re-run is still running"
    assert list(temp.iterdir()) == []  # the temporary copy is removed
    steps = (work / "steps.txt").read_text()
    time.sleep(1.5)
    assert (work / "steps.txt").read_text() == steps  # nothing trains on in the user's folder
    # The program's own traceback only: none of the command's, no KeyboardInterrupt.
    assert err.count("Traceback (most recent call last)") == 1
    assert "KeyboardInterrupt" not in err and f"autograd_lens{os.sep}" not in err
    assert "the run of the suggested edit was stopped" in err
