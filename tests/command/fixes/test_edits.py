"""The command's fix as an edit of the user's own lines, on every failing script of tests/scripts/
(fail_*.py and carrier_*.py) and on the book's LSTM script: the JSON report's "edits", applied
bottom-up by this test, give a program that runs clean; --verify says so too, from a temporary
copy, without writing into the script's folder; the exit code stays the first run's; healthy
runs print nothing extra. Where no edit can be derived, the script is listed in NO_EDIT with the
reason, and the command must offer none (an empty edit is honest, a guessed one is not).

Each script runs through the command's own main() in the test process, which has imported torch
already; only --verify's re-run is a new process. The fixed program runs in the test process too.
"""

from __future__ import annotations

import contextlib
import io
import json
import linecache
import os
import runpy
import sys
from pathlib import Path

import pytest

from forked_command import completed
from autograd_lens.__main__ import main
from autograd_lens.source.edits import Edit, apply, by_file
from places import REPOSITORY, TESTS

ROOT = REPOSITORY
SCRIPTS = TESTS / "scripts"
FAILING = [p.name for p in sorted(SCRIPTS.glob("fail_*.py"))] + [
    p.name for p in sorted(SCRIPTS.glob("carrier_*.py"))] + [
    "fail_18_checkpoint.py reentrant", "-m demo_pkg.train one --two",
    str(ROOT / "notebooks" / "scripts" / "train_rnn.py") + " --epochs 1"]
HEALTHY = ["ok_fixed_loops.py"]
# Failing scripts for which the command derives no edit, and why. Each must get none.
NO_EDIT = {
    "carrier_cached_by_lru.py": "no pattern shows in the evidence (\"unknown\"): nothing to edit",
    "carrier_memory_bank.py": "a module's list of kept tensors: which entries to keep is the "
                              "model's design",
    "carrier_state_in_generator.py": "the state lives in a generator's frame, not in the step",
    "carrier_loss_helper.py": "the running total is backwarded inside a helper: keeping it as "
                              "a number there would leave the helper a float to backward",
}


def run_command(spec: str, report: Path) -> dict:
    """``python -m autograd_lens --report REPORT --verify SPEC`` run by main() in this process
(``--verify``: accepted, the default),
    from the scripts' folder: its exit code, output and report."""
    words = spec.split()
    out, err = io.StringIO(), io.StringIO()
    saved = list(sys.path), list(sys.argv), os.getcwd()
    os.chdir(SCRIPTS)
    sys.path.insert(0, str(SCRIPTS))  # as `python -m autograd_lens` puts the working folder first
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["--report", str(report), "--verify"] + words)
            except SystemExit as leaving:
                code = leaving.code
    finally:
        sys.path[:], sys.argv[:] = saved[0], saved[1]
        os.chdir(saved[2])
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
            "report": json.loads(report.read_text())}


def run_as_a_process(spec: str, report: Path) -> dict:
    """``python -m autograd_lens --report REPORT SPEC`` as a process (forked from the tests'
    command server), from the scripts' folder: its exit code, output and report."""
    done = completed(["--report", str(report), *spec.split()], SCRIPTS)
    return {"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
            "report": json.loads(report.read_text())}


def run_fixed(spec: str, edits: list[Edit], folder: Path) -> str | None:
    """Apply ``edits`` (bottom-up, file by file) to copies in ``folder`` and run the fixed
    script in this process: None when it runs clean, else what it raised."""
    words = spec.split()
    script = str(SCRIPTS / words[0]) if not os.path.isabs(words[0]) else words[0]
    copies = {}
    for file, group in by_file(edits).items():
        copies[os.path.abspath(os.path.join(SCRIPTS, file))] = copy = \
            folder / os.path.basename(file)
        copy.write_text("".join(apply(group, linecache.getlines(
            os.path.abspath(os.path.join(SCRIPTS, file))))))
    saved = list(sys.path), list(sys.argv), os.getcwd()
    sys.argv, sys.path[0] = words, os.path.dirname(script)
    os.chdir(SCRIPTS)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(str(copies.get(script, script)), run_name="__main__")
    except BaseException as caught:  # noqa: BLE001 - what the fixed program raised is the answer
        return repr(caught)
    finally:
        sys.path[:], sys.argv[:] = saved[0], saved[1]
        os.chdir(saved[2])
    return None


def _snapshot(folder: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in folder.rglob("*")
            if "__pycache__" not in p.parts}


def _edits(report: dict) -> list[Edit]:
    return [Edit(e["file"], e["line"], e["old"], tuple(e["new"])) for e in report["edits"]]


@pytest.mark.parametrize("spec", FAILING, ids=lambda s: s.split()[0].split("/")[-1]
                         + ("_reentrant" if "reentrant" in s else ""))
def test_the_edit_makes_the_failing_script_run_clean_and_verify_says_so(spec, tmp_path):
    before = _snapshot(SCRIPTS)
    found = run_as_a_process(spec, tmp_path / "report.json")
    report, err = found["report"], found["stderr"]
    assert found["code"] == 1  # the first run's exit code, whatever the re-run did
    assert _snapshot(SCRIPTS) == before  # the runs of the edits wrote nothing beside the script
    assert len(report["alternatives"]) == len(report["alternatives_computes"])
    _check_edit_lines(report)
    if spec in NO_EDIT:
        assert report["edits"] == [] and report["alternatives"] == [], NO_EDIT[spec]
        assert report["verified"] is None and "run in a sandbox" not in err
        assert "The fix as an edit" not in err and "\n+++ " not in err
        assert "no edit of your lines" in err
        if report["pattern"] == "unknown":
            assert "Likely pattern: none that the evidence shows" in err
            assert "no pattern shows in the evidence" in err
        return
    assert report["edits"], f"no edit for {spec}"
    assert report["computes"]
    if not spec.startswith("-m"):
        assert run_fixed(spec, _edits(report), tmp_path) is None
    assert report["verified"]["ran"] is True and report["verified"]["error"] is None, \
        report["verified"]
    assert report["verdict"] == "gone" and report["verified"].get("missing", []) == [], \
        report["verified"]
    assert report["verified"]["backward_calls"] >= 1
    assert "The fix as an edit of your program, run and verified (" in err and "\n+++ " in err
    assert err.index("\nSee: ") < err.index("run in a sandbox") < err.index("The fix as an edit")
    if spec == FAILING[-1]:  # the book's LSTM script: its tuple state gets a tuple edit
        assert report["pattern"] == "hidden_state"
        new = [line.strip() for e in report["edits"] for line in e["new"]]
        assert "state = tuple(s.detach() for s in state)" in new
        assert "if state is not None:" in new  # state starts as None in that script


def test_the_check_fails_on_a_broken_edit(tmp_path):
    """The check above is not a formality: an edit that leaves the error in place is caught."""
    script = SCRIPTS / "fail_01_backward_twice.py"
    line = script.read_text().splitlines()[8]
    assert line.startswith("loss.backward()")
    broken = [Edit(str(script), 9, line, ("# a no-op edit", line))]
    assert "Trying to backward through the graph" in run_fixed("fail_01_backward_twice.py",
                                                                broken, tmp_path)


def _check_edit_lines(report: dict) -> None:
    for edit in report["edits"]:
        path = Path(edit["file"]) if os.path.isabs(edit["file"]) else SCRIPTS / edit["file"]
        assert path.is_file(), edit
        assert path.read_text().splitlines()[edit["line"] - 1] == edit["old"], edit
        assert isinstance(edit["new"], list)


def test_a_healthy_script_prints_nothing_extra_and_is_not_rerun(tmp_path, monkeypatch):
    import autograd_lens.text.command as command

    started = []

    class Recorded(command.Rerun):   # the re-run's process, started with the first run
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(command, "Rerun", Recorded)
    found = run_command("ok_fixed_loops.py", tmp_path / "report.json")
    assert found["code"] == 0 and found["stderr"] == ""
    assert found["report"]["edits"] == [] and found["report"]["verified"] is None
    # one process for the replay and the runs of the edits, started with the first run:
    # stopped and reaped
    assert len(started) == 1 and all(r.process.returncode is not None for r in started)
    assert found["report"]["recorded"] is None


def test_edits_apply_bottom_up_and_check_the_old_text():
    lines = ["a\n", "b\n", "c\n"]
    edits = [Edit("f.py", 1, "a", ("x", "a")), Edit("f.py", 3, "c", ())]
    assert apply(edits, lines) == ["x\n", "a\n", "b\n"]
    with pytest.raises(ValueError, match="line 2 of f.py"):
        apply([Edit("f.py", 2, "not b", ("y",))], lines)


def test_the_help_says_the_edits_run_in_a_sandbox():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(out.getvalue().split())
    assert "--no-verify" in text and "runs it in a sandbox" in text
    assert "a write outside it" in text and "are refused" in text.split("a write outside it")[1]
    assert "not that the edit computes what you meant" in text


def test_verify_reports_an_edit_that_does_not_fix_the_error(tmp_path):
    from autograd_lens.run.verify import describe, verdict, verify

    script = SCRIPTS / "fail_01_backward_twice.py"
    line = script.read_text().splitlines()[8]
    assert line.startswith("loss.backward()")
    no_fix = [Edit(str(script), 9, line, ("# still the same", line))]
    before = _snapshot(SCRIPTS)
    verified = verify(no_fix, None, [str(script)], calls_before=1)
    assert verified["ran"] is True and verified["backward_calls"] == 1
    assert verified["error"].startswith("RuntimeError: Trying to backward through the graph")
    assert "it still fails, after 1 backward call" in describe(verified, 1)
    assert verdict(verified, 1) == "still_fails"
    assert _snapshot(SCRIPTS) == before
    nothing = verify([], None, [str(script)], calls_before=1)
    assert nothing == {"ran": False, "backward_calls": 0, "error": "no edit was derived to run"}


RERUN_PROBE = '''"""Fails on its second backward; says how the run that verifies its edit started and ended."""
import atexit
import os
import socket
import sys

import torch

port, started_in, steps = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
assert os.path.exists("here.txt") and os.getcwd() != started_in, "not started in a copy of the first run's folder"
assert "AUTOGRAD_LENS_TEST_SEEN" not in os.environ, "not started with the first run's environment"
assert sys.stdin.read() == "", "the re-run has no standard input"
# Said over the loopback (which the sandbox allows; a file outside its folder it refuses).
atexit.register(lambda: socket.create_connection(("127.0.0.1", port)).sendall(b"atexit ran"))
w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
for step in range(steps):
    loss.backward()
'''


@pytest.mark.parametrize("steps, stopped", [(10, True), (3, False)])
def test_the_rerun_starts_as_the_first_run_did_and_a_stopped_one_skips_atexit(
        steps, stopped, tmp_path, monkeypatch):
    """The re-run's process is started with the first run: it runs in a copy of the folder the
    first run started in (not the one the program moved to), with the environment the first run
    started with, and it reads no input. Stopped (10 calls, past the limit of 1 + 1 + 2)
    it ends at once, without the program's atexit handlers; ending by itself (3 calls), it runs
    them, as Python does."""
    from autograd_lens.run.counting import MORE_CALLS
    from autograd_lens.run.rerun import Rerun
    from autograd_lens.run.verify import verify

    import socket

    script = tmp_path / "probe.py"
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(1.0)
    script.write_text(RERUN_PROBE)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "start").mkdir()
    (tmp_path / "start" / "here.txt").write_text("the first run's folder\n")
    monkeypatch.chdir(tmp_path / "start")
    start = os.getcwd()
    with Rerun() as rerun:                                   # the first run starts
        monkeypatch.setenv("AUTOGRAD_LENS_TEST_SEEN", "1")   # and changes its environment
        monkeypatch.chdir(tmp_path / "elsewhere")            # and its folder, then fails
        line = "    loss.backward()"
        assert script.read_text().splitlines()[17] == line
        edit = Edit(str(script), 18, line, ("    loss.backward(retain_graph=True)",))
        port = str(listener.getsockname()[1])
        verified = verify([edit], None, [str(script), port, start, str(steps)],
                          calls_before=1, rerun=rerun)
    assert {k: verified[k] for k in ("ran", "error", "backward_calls", "stopped", "ended")} == \
        {"ran": True, "error": None, "backward_calls": 1 + 1 + MORE_CALLS if stopped else steps,
         "stopped": stopped, "ended": not stopped}
    try:
        connection, _ = listener.accept()
        said = connection.recv(100)
    except TimeoutError:
        said = b""
    listener.close()
    assert said == (b"" if stopped else b"atexit ran")
