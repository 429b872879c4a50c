"""`python -m autograd_lens` under hard use: a program that catches the error, a program that
already diagnoses its own errors, backward in threads.

Each script (tests/scripts/hard_*.py) runs under the command and under plain `python`; what the
program itself prints must be the same, byte for byte, and the command's diagnosis must be said
once, at the moment of the failure, and be in the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import forked_command
from places import TESTS

SCRIPTS = TESTS / "scripts"
SAID = "autograd_lens: this backward reaches a graph that an earlier call already went through."
CAUGHT = ["hard_caught_logged.py", "hard_framework_wrapper.py", "hard_own_guard.py"]
THREADS = ["hard_thread_fails.py", "hard_threads_at_once.py"]


def run(*args: str, command: bool = True, cwd: Path = SCRIPTS) -> tuple[int, str, str]:
    """The command (``--no-verify``) as a process forked from the tests' command server, or
    the program alone under plain ``python``."""
    if command:
        return forked_command.command(["--no-verify", *args], cwd, dict(os.environ), 300)
    done = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout, done.stderr


def entering(script: str) -> tuple[str, int]:
    for number, line in enumerate((SCRIPTS / script).read_text().splitlines(), 1):
        if "# enters: " in line:
            return line.split("# enters: ")[1].split()[0], number
    raise AssertionError(f"{script} has no '# enters:' comment")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each script under the command (with a report) and under plain python, two at a time."""
    folder = tmp_path_factory.mktemp("hard")
    jobs = {}
    for script in CAUGHT + THREADS + ["hard_spawned_rank.py"]:
        jobs[script] = (("--report", str(folder / f"{script}.json"), script), True)
        jobs[f"plain {script}"] = ((script,), False)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run, *args, command=is_command)
                   for name, (args, is_command) in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
    results["folder"] = folder
    return results


@pytest.mark.parametrize("script", CAUGHT)
def test_a_caught_error_is_still_diagnosed_once_and_reported(runs, script):
    code, out, err = runs[script]
    plain_code, plain_out, plain_err = runs[f"plain {script}"]
    assert (code, out) == (plain_code, plain_out) == (1, plain_out)
    assert err.count(SAID) == 1, err
    name, line = entering(script)
    assert f"  {name}  {script}:{line} in " in err
    report = json.loads((runs["folder"] / f"{script}.json").read_text())
    assert report["error"].startswith("Trying to backward through the graph a second time")
    assert (report["carriers"][0]["name"], report["carriers"][0]["line"]) == (name, line)
    # No frame of the command in any traceback printed.
    assert f"autograd_lens{os.sep}" not in err


@pytest.mark.parametrize("script", ["hard_caught_logged.py", "hard_framework_wrapper.py"])
def test_the_programs_own_traceback_is_printed_unchanged(runs, script):
    """The program's own output on stderr (its logged traceback) is there byte for byte, and the
    diagnosis comes before it: said at the moment of the failure."""
    err, plain_err = runs[script][2], runs[f"plain {script}"][2]
    assert plain_err and plain_err in err
    assert err.index(SAID) < err.index(plain_err)


@pytest.mark.parametrize("script", THREADS)
def test_a_backward_failing_in_a_thread_is_diagnosed(runs, script):
    """Also while another thread is inside a backward of its own: each thread's calls are
    counted apart (a shared count took the failing call for one run by the other's backward,
    and said nothing)."""
    code, out, err = runs[script]
    plain_code, plain_out, plain_err = runs[f"plain {script}"]
    assert (code, out) == (plain_code, plain_out) == (0, plain_out)
    assert err.count(SAID) == 1, err
    name, line = entering(script)
    assert f"  {name}  {script}:{line} in " in err
    report = json.loads((runs["folder"] / f"{script}.json").read_text())
    assert report["carriers"][0]["name"] == name and report["pattern"] == "hidden_state"
    assert plain_err in err  # threading's report of the thread's error, unchanged


def test_a_failure_in_a_child_process_gets_a_note(runs):
    code, out, err = runs["hard_spawned_rank.py"]
    plain_code, plain_out, plain_err = runs["plain hard_spawned_rank.py"]
    assert (code, out) == (plain_code, plain_out) == (1, "")
    assert "Trying to backward through the graph a second time" in plain_err
    assert plain_err.strip().splitlines()[-1] in err
    assert err.endswith("its diagnosis was said there (above) and is in the report's "
                        "\"children\"; no replay or edit run is made for a child's failure.\n")
    assert "autograd_lens: in child process " in err  # see test_cli_children


def test_diagnose_on_error_leaves_its_own_frames_out_of_the_traceback(runs):
    """Under plain python too: the traceback goes from the program's line to torch's."""
    err, plain_err = runs["hard_own_guard.py"][2], runs["plain hard_own_guard.py"][2]
    assert "Carried in by" in plain_err  # diagnose_on_error's own diagnosis, in the message
    assert f"autograd_lens{os.sep}" not in plain_err
    assert plain_err in err  # and the command prints the very same traceback
