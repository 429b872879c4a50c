"""The re-run's process forked from the command's (``Rerun(fork=True)``), as in a clean copy that
imported torch before the command started (the tests' command server): it replays as the process
started afresh does, it is its own process group, and nothing of it outlives ``close``. The
command forks it only where the process declared itself a clean copy, with no other thread and
torch on one thread."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from autograd_lens.run import rerun

FAILS_TWICE = '''\
import torch

w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
loss.backward()
'''

# In a clean interpreter: torch imported, then the re-run's process forked and a replay run in it.
CLEAN_COPY = '''\
import json, os, sys, time
import torch
from autograd_lens.run.replay_run import finish_replay, start_replay
from autograd_lens.run.rerun import Rerun

script = sys.argv[1]
os.chdir(os.path.dirname(script))
rerun = Rerun(fork=True)
pid, folder = rerun.process.pid, rerun.folder
with open(f"/proc/{pid}/cmdline", "rb") as its, open("/proc/self/cmdline", "rb") as mine:
    forked = its.read() == mine.read()
group = os.getpgid(pid)
try:
    found = finish_replay(start_replay(None, [script], 1, 120, rerun, "freed"))
finally:
    rerun.close()
try:
    os.killpg(group, 0)
    left = True
except ProcessLookupError:
    left = False
print(json.dumps({"forked": forked, "own_group": group == pid, "call": found and found["call"],
                  "kind": found and found["kind"], "left": left,
                  "folder_left": os.path.exists(folder)}))
'''


def test_a_forked_re_run_replays_in_its_own_group_and_ends_with_close(tmp_path):
    script = tmp_path / "fails_twice.py"
    script.write_text(FAILS_TWICE)
    done = subprocess.run([sys.executable, "-c", CLEAN_COPY, str(script)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found == {"forked": True, "own_group": True, "call": 2, "kind": "freed",
                     "left": False, "folder_left": False}


def test_only_a_declared_clean_copy_without_other_threads_forks(monkeypatch):
    assert rerun.fork_from_clean_copies is False  # the command never declares it
    assert not rerun.forkable()
    monkeypatch.setattr(rerun, "fork_from_clean_copies", True)
    counted = threading.active_count
    monkeypatch.setattr(rerun.threading, "active_count", lambda: 1)
    monkeypatch.setattr(sys.modules["torch"], "get_num_threads", lambda: 1)
    assert rerun.forkable()
    monkeypatch.setattr(sys.modules["torch"], "get_num_threads", lambda: 2)
    assert not rerun.forkable()  # a thread pool the copy would lack
    monkeypatch.setattr(sys.modules["torch"], "get_num_threads", lambda: 1)
    monkeypatch.setattr(rerun.threading, "active_count", counted)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not rerun.forkable()  # a lock another thread holds would stay held
    finally:
        release.set()
        other.join()
