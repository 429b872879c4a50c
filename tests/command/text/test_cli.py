"""`python -m autograd_lens`: scripts run unchanged, and a failing backward names its carriers.

Every failing situation of the book is a small script in tests/scripts/ (fail_NN_*.py, from
notebook NN); the line where the notebook's variable enters the step carries the comment
`# enters: NAME`. The command must name NAME first, on that line, and link the page about it.
Each Python start imports torch (about 2 s), so most runs are processes forked from one that
imported it once (the tests' command server); processes started afresh are kept for what only
they show: the real command from start to exit code, and plain `python` as the reference that
the command must match.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import forked_command
from places import TESTS

SCRIPTS = TESTS / "scripts"
FAILING = sorted(SCRIPTS.glob("fail_*.py"))
CHECKPOINT_REENTRANT = "fail_18_checkpoint.py reentrant"

# Every failing script, and the other runs of the command that need no process started afresh,
# each a process forked from the tests' command server (see forked_command), one after the
# other; the real command runs in a process of its own below (`hidden`), and so does plain
# `python` wherever the command's output is compared with it.
# Runs of the command in the server that the tests below know by a short name.
NAMED_IN_SERVER = {"module": "-m demo_pkg.train one --two", "missing": "no_such_script.py",
                   "help": "--help"}
IN_SERVER = [p.name for p in FAILING] + [CHECKPOINT_REENTRANT, "exit_three.py", "ok_fixed_loops.py",
                                         "plain ok_fixed_loops.py", "not_python.txt", "",
                                         "--report nowhere/r.json exit_three.py",
                                         *NAMED_IN_SERVER.values()]


def in_server(specs: list[str], folder: Path) -> dict:
    """Each spec run as the command (``--no-verify``, a report of its own), or under plain
    ``python`` ("plain SCRIPT ARGS"), in the scripts' folder: its exit code, output and report."""
    results = {}
    for spec in specs:
        report = folder / (spec.replace(" ", "_") + ".json")
        if spec.startswith("plain "):
            code, out, err = run(*spec.split()[1:], command=False)
        else:
            code, out, err = forked_command.command(
                ["--report", str(report), "--no-verify", *spec.split()], SCRIPTS,
                dict(os.environ), 900)
        results[spec] = {"code": code, "stdout": out, "stderr": err,
                         "report": json.loads(report.read_text()) if report.exists() else None}
    return results


def run(*args: str, command: bool = True) -> tuple[int, str, str]:
    prefix = [sys.executable, "-m", "autograd_lens", "--no-verify"] if command else [sys.executable]
    # (a guard against a hang, not a speed check: a busy machine may take several times a
    # quiet one's time)
    done = subprocess.run(prefix + list(args), cwd=SCRIPTS, capture_output=True, text=True,
                          timeout=900)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every process, two at a time (the machine has two cores)."""
    folder = tmp_path_factory.mktemp("reports")
    jobs = {
        "hidden": (("--report", str(folder / "hidden.json"), "fail_05_hidden_state.py"), True),
        "module plain": (("-m", "demo_pkg.train", "one", "--two"), False),
        "unrelated": (("unrelated_error.py",), True),
        "unrelated plain": (("unrelated_error.py",), False),
        "args": (("ok_arguments_files.py", "--steps", "3", "hi"), True),
        "args plain": (("ok_arguments_files.py", "--steps", "3", "hi"), False),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        served = pool.submit(in_server, IN_SERVER, folder)
        futures = {name: pool.submit(run, *args, command=is_command)
                   for name, (args, is_command) in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
        results.update(served.result())
    for name, spec in NAMED_IN_SERVER.items():
        run_ = results[spec]
        results[name] = (run_["code"], run_["stdout"], run_["stderr"])
    results["folder"] = folder
    return results


def expected(script: Path) -> tuple[str, int]:
    for number, line in enumerate(script.read_text().splitlines(), 1):
        found = re.search(r"# enters: (\S+)", line)
        if found:
            return found.group(1), number
    raise AssertionError(f"{script.name} has no '# enters:' comment")


@pytest.mark.parametrize("spec", [p.name for p in FAILING] + [CHECKPOINT_REENTRANT])
def test_each_book_failure_names_the_notebooks_variable_and_line(runs, spec):
    script = SCRIPTS / spec.split()[0]
    name, line = expected(script)
    result = runs[spec]
    assert result["code"] == 1
    report = result["report"]
    assert report["error"].startswith(("Trying to backward", "one of the variables needed"))
    # The carrier first, after the recorded write when there is one (the in-place error's)
    first = next(c for c in report["carriers"] if c.get("kind") != "write")
    enters = first.get("enters") or first  # (the freed-graph error's line: where it got the graph)
    assert (enters.get("name", first["name"]), enters["line"], Path(enters["file"]).name) == \
        (name, line, script.name)
    assert f"/notebooks/{script.stem[5:7]}_" in report["page"]  # the notebook's own page
    assert first["why"] and first["function"]
    # The printed diagnosis follows the traceback and says the same (the last one: an error
    # the program caught before is said at its own moment, before).
    err = result["stderr"]
    assert err.index("Traceback") < err.rindex("Carried in by") < err.rindex(report["page"])
    assert f"  {first['name']}  {script.name}:{first['line']} in {first['function']}" in err
    if "enters" in first:
        assert f" at {script.name}:{line}" in err


def test_a_caught_error_keeps_nothing_alive_and_the_last_error_is_explained(runs):
    result = runs["fail_05_after_a_caught_error.py"]
    assert result["stdout"] == "smoke test released its tensors: True\n"
    # The smoke test's error, caught, is said at its moment; the last one after the traceback.
    err = result["stderr"]
    assert err.count("Carried in by") == 2
    assert err.index("Carried in by") < err.index("Traceback") < err.rindex("Carried in by")
    assert result["report"]["carriers"][0]["name"] == "h"


def test_a_compiled_region_is_named_and_replayed_as_plain_code(runs):
    """The failing run's graph goes through compiled regions; the replay, under its dispatch
    mode, runs them as plain PyTorch code and fails at the same call (a compiler's tracing
    calls are counted in neither run), so what it recorded is said, with where it differs."""
    report = runs["fail_05_compiled_cell.py"]["report"]
    assert report["hidden"] and all("Compiled" in name for name in report["hidden"])
    assert report["recorded"] and report["carriers"][0]["name"] == "h"
    err = runs["fail_05_compiled_cell.py"]["stderr"]
    assert "which the replay, under its recording, ran as plain PyTorch code" in err
    assert "cannot see inside a compiled region" not in err


def test_a_replay_that_kept_the_compiled_regions_is_not_said_to_have_run_them_as_code():
    """The sentence about a replay that ran the compiled regions as plain code is said only
    when its graph had none there; a recorded finding whose replay saw them keeps the old one."""
    from autograd_lens.explain.finding import Finding

    kept = Finding("error", [], [], None, hidden=("CompiledFunctionBackward",), recorded=True)
    assert "cannot see inside a compiled region" in str(kept)
    assert "ran as plain PyTorch code" not in str(kept)
    ran = Finding("error", [], [], None, hidden=("CompiledFunctionBackward",), recorded=True,
                  hidden_replayed=True)
    assert "ran as plain PyTorch code" in str(ran)


def test_the_real_command_prints_the_traceback_then_the_carriers(runs):
    code, out, err = runs["hidden"]
    assert code == 1 and out == ""
    assert err.startswith("Traceback (most recent call last):")
    assert "autograd_lens" not in err.split("RuntimeError:")[0]  # no frame of the command
    name, line = expected(SCRIPTS / "fail_05_hidden_state.py")
    assert f"  {name}  fail_05_hidden_state.py:{line} in <module>: is read here before it" in err
    report = json.loads((runs["folder"] / "hidden.json").read_text())
    assert set(report) >= {"error", "carriers", "frontier", "pattern", "page", "hidden"}
    assert report["pattern"] == "hidden_state" and report["hidden"] == []
    assert [c["name"] for c in report["carriers"]][:1] == ["h"]
    assert set(report["carriers"][0]) == {"name", "file", "line", "function", "why"}


def test_a_module_run_with_dash_m_gets_its_arguments_and_the_diagnosis(runs):
    code, out, err = runs["module"]
    assert code == 1
    # What the package and the module see is what `python -m` shows them.
    assert out == "package saw: ['-m', 'one', '--two'] args: ['one', '--two'] name: __main__\n"
    assert out == runs["module plain"][1]
    name, line = expected(SCRIPTS / "demo_pkg" / "train.py")
    assert f"  {name}  train.py:{line} in <module>" in err
    assert "\nSee: " in err and "05_rnn_hidden_state.html\n" in err


def test_exit_codes_and_unrelated_errors_pass_through_untouched(runs):
    assert (runs["exit_three.py"]["code"], runs["exit_three.py"]["stdout"]) == (3, "leaving with 3\n")
    assert runs["unrelated"] == runs["unrelated plain"]
    assert runs["unrelated"][0] == 1 and "KeyError: 'learning_rate'" in runs["unrelated"][2]


def test_working_scripts_run_exactly_as_under_python(runs):
    assert runs["args"][0] == 0
    assert runs["args"] == runs["args plain"]
    fixed, plain_run = runs["ok_fixed_loops.py"], runs["plain ok_fixed_loops.py"]
    assert fixed["code"] == 0 and fixed["stdout"].count("\n") == 4
    assert (fixed["stdout"], fixed["stderr"]) == (plain_run["stdout"], plain_run["stderr"])


def test_a_healthy_run_writes_a_report_without_an_error(runs):
    report = runs["ok_fixed_loops.py"]["report"]
    assert report["error"] is None and report["carriers"] == []


@pytest.mark.parametrize("name, says", [
    ("missing", "cannot find the script 'no_such_script.py'"),
    ("not_python.txt", "'not_python.txt' is not a Python script"),
    ("--report nowhere/r.json exit_three.py", "the folder"),
    ("", "no script given"),
])
def test_bad_use_is_one_line_and_exit_code_2(runs, name, says):
    found = runs[name]
    code, out, err = found if isinstance(found, tuple) else (
        found["code"], found["stdout"], found["stderr"])
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("python -m autograd_lens: error: ")
    assert says in err


def test_help_explains_the_command(runs):
    code, out, _ = runs["help"]
    assert code == 0
    assert "usage: python -m autograd_lens [--report FILE] [--no-verify] (script.py | -m module)" in out
    assert "--report FILE" in out and "Healthy runs print nothing extra" in out
