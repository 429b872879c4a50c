"""`python -m autograd_lens` and the processes a program starts (issue 42, items 2 and 4): the
re-runs (the replay and each edit's run) see the environment that plain python gives the
program, and so do the subprocesses the program starts; children started with the spawn or
forkserver method are watched as forked ones are.

Each script (tests/scripts/children_*.py) runs under the command and under plain `python`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from places import TESTS

SCRIPTS = TESTS / "scripts"
ROOT = SCRIPTS.parent.parent
PACKAGE = ROOT / "autograd_lens"


class Listener:
    """What each run of a program said on a socket of this machine (the sandbox lets a re-run
    reach it, and nothing else of the re-run's reaches the test): one JSON value a connection."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.said: list = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection:
                data = b""
                while chunk := connection.recv(1 << 16):
                    data += chunk
            self.said.append(json.loads(data))

    def close(self) -> None:
        self.server.close()


def _run(args: list[str], cwd: Path, env: dict[str, str],
         command: tuple[str, ...] | None = ()) -> subprocess.CompletedProcess:
    prefix = [sys.executable] + ([] if command is None else ["-m", "autograd_lens", *command])
    return subprocess.run(prefix + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _as_plain(seen: dict, copy: str, original: str) -> dict:
    """What a re-run saw, with its copy of the folder named as the original (the one thing the
    sandbox changes), and without ``TMPDIR`` and ``PWD``, which must point into its copy."""
    def moved(value):
        if isinstance(value, str) and (value == copy or value.startswith(copy + os.sep)):
            return original + value[len(copy):]
        if isinstance(value, list):
            return [moved(v) for v in value]
        return value

    environ = dict(seen["environ"])
    assert environ.pop("TMPDIR").startswith(copy + "."), seen  # the run's own temporary folder
    assert environ.pop("PWD") == seen["cwd"] == copy, seen
    return {"pythonpath": seen["pythonpath"], "path": moved(seen["path"]), "cwd": original,
            "environ": environ, "sub": [seen["sub"][0], moved(seen["sub"][1])]}


@pytest.mark.parametrize("how", ["tool found in the working folder", "user's PYTHONPATH"])
def test_the_re_runs_see_the_environment_of_plain_python(tmp_path, how):
    """PYTHONPATH, sys.path and every environment variable (before torch is imported), and a
    python subprocess's PYTHONPATH and sys.path: the same in the first run, the replay and an
    edit's run as under plain python, the re-runs' folder (their copy) apart. Nothing points
    into the tool's own folder unless the user's own PYTHONPATH does."""
    work = tmp_path / "work"
    (work / "prog").mkdir(parents=True)
    shutil.copy(SCRIPTS / "children_environment.py", work / "prog")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PWD")}
    env.update(OMP_NUM_THREADS="1", PWD=str(work))
    if how == "user's PYTHONPATH":
        (tmp_path / "lib").mkdir()
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "lib"), str(ROOT)])
    else:  # the command is found as python finds a module in the working folder
        (work / "autograd_lens").symlink_to(PACKAGE, target_is_directory=True)
    listener = Listener()
    try:
        args = ["prog/children_environment.py", str(listener.port)]
        plain = _run(args, work, env, command=None)
        assert plain.returncode == 1 and len(listener.said) == 1, plain.stderr
        done = _run(args, work, env)
        assert done.returncode == 1 and "run and verified" in done.stderr, done.stderr
    finally:
        listener.close()
    plain_seen, *runs = listener.said
    by_folder = {os.path.basename(seen["cwd"]): seen for seen in runs}
    assert sorted(by_folder) == ["run_0", "run_1", "work"], sorted(by_folder)
    assert by_folder["work"] == plain_seen  # the first run
    for name in ("run_0", "run_1"):  # the replay, the edit's run
        assert _as_plain(by_folder[name], by_folder[name]["cwd"], str(work)) == \
            dict(plain_seen, environ={k: v for k, v in plain_seen["environ"].items()
                                      if k not in ("TMPDIR", "PWD")})
    if how != "user's PYTHONPATH":  # so no run, nor its subprocess, has the tool's folder
        paths = [*plain_seen["path"], *plain_seen["sub"][1]]
        assert plain_seen["pythonpath"] is plain_seen["sub"][0] is None
        # (the interpreter's own folders can sit inside the checkout: a .venv made there)
        own = tuple({os.path.join(sys.prefix, ""), os.path.join(sys.base_prefix, "")})
        assert str(work) not in paths and not any(
            str(ROOT) in p for p in paths if not os.path.join(p, "").startswith(own)), paths


SPAWNED = "children_spawned.py"


def _line_of(script: str, text: str) -> int:
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_children_started_by_spawn_and_forkserver_are_watched(tmp_path):
    """A spawned Process, a forkserver Process, a spawned ProcessPoolExecutor's worker and a
    spawned Pool's worker that fail: each
    diagnosed in the child, at once, and in the parent's report with its pid and how it was
    started; the program's output, objects and exit code as under python (a healthy spawned
    child's exit code and a Pool's results too); no replay and no edit run for them."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    report = tmp_path / "report.json"
    plain = _run([SPAWNED], SCRIPTS, env, command=None)
    done = _run(["--report", str(report), SPAWNED], SCRIPTS, env)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout)
    assert plain.returncode == 1 and "\n10\ncaught in SpawnProcess-4 " in plain.stdout and \
        "[4, 6]\n" in plain.stdout, plain.stderr  # the executor's and the Pool's results
    assert "healthy SpawnProcess-1 False\n" in plain.stdout  # torch not imported before
    assert "\nSpawnProcess-1 3 " in plain.stdout  # the healthy child's own exit code
    assert f"\n{env.get('PYTHONPATH')} [{str(SCRIPTS)!r}, " in plain.stdout  # its paths
    assert "entry" not in plain.stdout and "autograd_lens" not in plain.stdout
    children = json.loads(report.read_text())["children"]
    assert [c["how"] for c in children] == [
        "multiprocessing, spawn: SpawnProcess-2",
        "multiprocessing, forkserver: ForkServerProcess-3",
        "multiprocessing, spawn: SpawnProcess-4", "multiprocessing, spawn: SpawnPoolWorker-5"], \
        children
    line = _line_of(SPAWNED, "return seed") - 1  # the second loss.backward(), which fails
    for child in children:
        assert f"autograd_lens: in child process {child['pid']} ({child['how']}):" in done.stderr
        assert child["parent"] != child["pid"] and child["pattern"] == "backward_twice"
        assert (child["carriers"][0]["name"], child["carriers"][0]["line"]) == ("loss", line)
    assert "Recorded in a replay" not in done.stderr and "Not recorded" not in done.stderr
    assert "run in a sandbox" not in done.stderr and "run and verified" not in done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("autograd_lens: this error happened in child process ") and \
        str(children[-1]["pid"]) in last.split(";")[0], last
    assert f"autograd_lens{os.sep}" not in done.stderr  # no frame of the tool in a traceback
    shown = [x for x in plain.stderr.splitlines() if "File " in x or x.startswith("RuntimeError")]
    assert shown and all(x in done.stderr for x in shown)


def test_a_torch_multiprocessing_spawn_rank_is_watched(tmp_path):
    """torch.multiprocessing.spawn: the rank's failure diagnosed in the rank, in the report;
    the parent's ProcessRaisedException said to come from it."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    report = tmp_path / "report.json"
    plain = _run(["hard_spawned_rank.py"], SCRIPTS, env, command=None)
    done = _run(["--report", str(report), "hard_spawned_rank.py"], SCRIPTS, env)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout) == (1, "")
    [child] = json.loads(report.read_text())["children"]
    assert child["how"] == "multiprocessing, spawn: SpawnProcess-1"
    assert child["pattern"] == "backward_twice" and child["carriers"][0]["name"] == "loss"
    assert f"autograd_lens: in child process {child['pid']} ({child['how']}):" in done.stderr
    assert done.stderr.endswith(
        f"\nautograd_lens: this error happened in child process {child['pid']}; its diagnosis "
        "was said there (above) and is in the report's \"children\"; no replay or edit run is "
        "made for a child's failure.\n")


def test_the_command_leaves_multiprocessing_as_it_found_it():
    """Changed only while the program runs, and only once the program imports it."""
    import multiprocessing.spawn

    from autograd_lens.text.spawned import Spawning

    own = multiprocessing.spawn.get_preparation_data
    with Spawning(os.getpid(), "children.jsonl", os.getcwd()) as spawning:
        assert spawning not in sys.meta_path
        assert multiprocessing.spawn.get_preparation_data.__wrapped__ is own
        asked = multiprocessing.spawn.get_preparation_data("asked")
        assert "autograd_lens" not in asked  # only a child's launch gets the extra entry
    assert multiprocessing.spawn.get_preparation_data is own
    gone = sys.modules.pop("multiprocessing.spawn")
    try:
        with Spawning(os.getpid(), "children.jsonl", os.getcwd()) as spawning:
            assert sys.meta_path[0] is spawning  # waiting for the program's import
        assert spawning not in sys.meta_path
    finally:
        sys.modules["multiprocessing.spawn"] = gone


def test_a_python_started_by_subprocess_is_said_not_watched():
    """Its failure, carried by the program's own error, is said to come from a process that
    the command does not watch; the child's own output has no diagnosis."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    plain = _run(["children_subprocess.py"], SCRIPTS, env, command=None)
    done = _run(["children_subprocess.py"], SCRIPTS, env)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout) == \
        (1, "child exit code 1\n")
    assert plain.stderr in done.stderr and "in child process" not in done.stderr
    assert done.stderr == plain.stderr + (
        "\nautograd_lens: this error happened in a child process, which the command does not "
        "watch; to see the diagnosis, run that part in the command's own process.\n")


def test_a_child_that_starts_one_while_it_bootstraps_gets_pythons_own_traceback():
    """multiprocessing's own error in a spawned child (a program without the __main__ guard):
    the same output, exit code and traceback as under python, no frame of the command's."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    plain = _run(["children_unguarded.py"], SCRIPTS, env, command=None)
    done = _run(["children_unguarded.py"], SCRIPTS, env)
    assert "An attempt has been made to start a new process" in plain.stderr
    assert (done.returncode, done.stdout, done.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr) == (0, "exit code 1\n", plain.stderr)


def test_errors_at_a_spawned_childs_first_backward(tmp_path):
    """The child's watch starts at its first backward call: a hook's error raised there shows
    the traceback it shows under python; the in-place error there is diagnosed in the child."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    report = tmp_path / "report.json"
    plain = _run(["children_first_call.py"], SCRIPTS, env, command=None)
    done = _run(["--report", str(report), "children_first_call.py"], SCRIPTS, env)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout)
    assert "KeyError: 'missing'\nSpawnProcess-1 0\n" in plain.stdout and \
        plain.stdout.endswith("SpawnProcess-2 1\n"), plain.stdout
    [child] = json.loads(report.read_text())["children"]
    assert child["how"] == "multiprocessing, spawn: SpawnProcess-2"
    assert "modified by an inplace operation" in child["error"]
    assert f"autograd_lens: in child process {child['pid']} ({child['how']}):" in done.stderr
    assert f"autograd_lens{os.sep}" not in done.stderr + done.stdout
    shown = [x for x in plain.stderr.splitlines() if x.startswith(("  File ", "RuntimeError"))]
    assert shown and all(x in done.stderr for x in shown)
