"""`python -m autograd_lens` under hard use: a loop that skips the failing batch, errors of the
program's own raised inside backward, a Ctrl-C during the diagnosis, an error that ends the
program after the diagnosis was said.

Each script (tests/scripts/hard2_*.py) runs under the command and under plain `python`; what
the program itself prints must be the same.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from places import TESTS

SCRIPTS = TESTS / "scripts"
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
    """Not once per failure: before the program runs, at the first failure, after the replay
    remade it, and at the end."""
    from autograd_lens.text import telling
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
    assert len(writes) == 4, len(writes)


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
    assert "KeyError: 'missing'" in err
    assert err.endswith("ValueError: the custom backward refuses\n")
    assert OURS not in err


def test_ctrl_c_during_the_diagnosis_is_raised_at_the_programs_call():
    """A KeyboardInterrupt that lands while the watch explains the failure: raised from the
    program's backward call, with no frame of the watch, its context the error, unchanged."""
    from autograd_lens.run.watch import Watch

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
                       f"failing backward at {script}:{line_of(script, '.backward()')} could not go "
                       "through.")
    assert tail[1].startswith("Fix: detach the state at the start of each batch")
    assert tail[2].startswith("Edit: ")
    assert tail[3].startswith("See: https://") and "05_rnn_hidden_state" in tail[3]


# -- python's own behaviour: -m, -c, -, abbreviations, paths, os._exit, diagnose_on_error ---

def both(args: list[str], cwd: Path, stdin: str | None = None) -> tuple[tuple, tuple]:
    """The command's run and plain python's, one after the other."""
    def one(command: bool) -> tuple:
        prefix = [sys.executable] + (["-m", "autograd_lens", "--no-verify"] if command else [])
        done = subprocess.run(prefix + args, cwd=cwd, capture_output=True, text=True,
                              timeout=300, input=stdin, env=dict(os.environ, OMP_NUM_THREADS="1"))
        return done.returncode, done.stdout, done.stderr
    return one(True), one(False)


@pytest.fixture
def packages(tmp_path):
    """pkg_raises (its __init__ raises a RuntimeError), pkg_no_main (a package without
    __main__), pkg_imports (its __init__ imports a missing module)."""
    for name, init in (("pkg_raises", "raise RuntimeError('the package cannot start')\n"),
                       ("pkg_no_main", ""), ("pkg_imports", "import not_an_installed_module\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(init)
        (tmp_path / name / "train.py").write_text("print('training')\n")
    return tmp_path


@pytest.mark.parametrize("module", ["pkg_raises.train", "pkg_no_main", "pkg_imports.train",
                                    "no_such_module"])
def test_run_module_errors_are_pythons_own(packages, module):
    """Python's message, traceback (its runpy frames included) and exit code, byte for byte."""
    ours, plain = both(["-m", module], packages)
    assert ours == plain and ours[0] == 1
    assert OURS not in ours[2]


PROBE_TEXT = ("import sys, __main__\n"
              "print(sys.argv, repr(sys.path[0]), sorted(vars(__main__)), __main__.__loader__,"
              " getattr(__main__, '__file__', None))\n")


@pytest.mark.parametrize("how", ["-c", "-c joined", "-", "-c error"])
def test_code_given_with_dash_c_or_on_stdin_runs_as_python_runs_it(tmp_path, how):
    if how == "-c":
        args, stdin = ["-c", PROBE_TEXT, "one", "--two"], None
    elif how == "-c joined":
        args, stdin = ["-c" + PROBE_TEXT, "one"], None
    elif how == "-":
        args, stdin = ["-", "one", "--two"], PROBE_TEXT
    else:
        args, stdin = ["-c", "import sys\nprint('half')\n1 / 0\n"], None
    ours, plain = both(args, tmp_path, stdin)
    assert ours == plain, (ours, plain)
    assert ours[0] == (1 if how == "-c error" else 0)


@pytest.mark.parametrize("option", ["--rep=r.json", "--no-v", "--rep"])
def test_an_abbreviated_option_is_refused_in_one_line_as_python_does(tmp_path, option):
    """Python takes no abbreviation of its options: '--rep' is not '--report', '--no-v' not
    '--no-verify'; the program does not run."""
    shutil.copy(SCRIPTS / "fail_01_backward_twice.py", tmp_path)
    args = [option] + (["r.json"] if option == "--rep" else []) + ["fail_01_backward_twice.py"]
    code, out, err = run(*args, command=(), cwd=tmp_path)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert err.startswith("python -m autograd_lens: error: ") and option.split("=")[0] in err
    assert not (tmp_path / "r.json").exists()


def test_the_diff_applies_with_patch_after_the_program_changed_folder(tmp_path):
    """Paths relative to where the command started (not to the program's new folder), and
    quoted so that `patch` takes a folder name with a space."""
    folder = tmp_path / "my runs"
    folder.mkdir()
    shutil.copy(SCRIPTS / "hard2_moves_away.py", folder)
    code, _, err = run("my runs/hard2_moves_away.py", cwd=tmp_path)
    assert code == 1
    lines = err.splitlines()
    start = lines.index('--- "my runs/hard2_moves_away.py"')
    diff = lines[start:start + 2]
    for line in lines[start + 2:]:
        if not line or not line[0] in " +-@":
            break
        diff.append(line)
    done = subprocess.run(["patch", "-p0", "--dry-run"], cwd=tmp_path, input="\n".join(diff) + "\n",
                          capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout, done.stderr, diff)


def test_a_report_is_written_when_the_program_ends_by_os_exit(tmp_path):
    shutil.copy(SCRIPTS / "hard2_os_exit.py", tmp_path)
    report = tmp_path / "report.json"
    code, out, _ = run("--report", str(report), "hard2_os_exit.py", cwd=tmp_path)
    assert (code, out) == (3, "trained\n")
    assert json.loads(report.read_text())["error"] is None


def test_a_program_with_its_own_diagnose_on_error_gets_the_diagnosis_once(tmp_path):
    """Its guard puts the diagnosis in the error's message; the command adds the replay's
    evidence and the summary, not the diagnosis again."""
    code, out, err = run("hard_own_guard.py")
    assert code == 1
    assert err.count("Carried in by") == 1 and err.count("Likely pattern") == 1, err
    assert err.count("\n+        h = h.detach()") == 1
    assert "from the program's own diagnose_on_error" in err


def test_the_names_of_execd_code_are_searched_as_a_scripts(tmp_path):
    report = tmp_path / "report.json"
    code, out, err = run("--report", str(report), "hard2_exec_training.py")
    assert (code, out) == (1, "")
    first = json.loads(report.read_text())["carriers"][0]
    assert (first["name"], first["file"], first["line"]) == ("h", "<training>", 5)
    assert "No variable of your program holds" not in err


def test_a_notebook_given_to_the_command_gets_one_line_and_exit_2(tmp_path):
    import nbformat

    notebook = tmp_path / "train.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")]),
                   str(notebook))
    code, out, err = run("train.ipynb", cwd=tmp_path)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "%load_ext autograd_lens" in err


def test_a_cell_that_calls_backward_twice_gets_its_edit_and_one_page():
    """In a real kernel, with the extension: the forward in the cell or in the cell before."""
    import nbformat
    from nbclient import NotebookClient

    sources = ["import torch\n%load_ext autograd_lens",
               "w = torch.ones(3, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\n"
               "loss.backward()",
               "loss = (w * w).sum()",
               "loss.backward()\nloss.backward()"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True).execute()
    for cell in (notebook.cells[1], notebook.cells[3]):
        [error] = [o for o in cell.outputs if o.output_type == "error"]
        message = error.evalue
        assert "The fix as an edit of your cell" in message and "\n+++ In [" in message
        [see] = [line for line in message.splitlines() if line.startswith("See:")]
        assert see.count("https://") == 1 and "01_backward_twice" in see, see


def test_failures_in_forked_children_are_in_the_parents_report(tmp_path):
    """A forked child (os.fork) and a Pool worker (fork start method): each diagnosed in the
    child, at once, and in the parent's report with the child's pid and how it was started;
    the Pool's error that ends the parent is said to come from the child."""
    report = tmp_path / "report.json"
    script = "hard2_children.py"
    code, out, err = run("--report", str(report), script)
    assert (code, out) == run(script, command=None)[:2] == (1, "")
    children = json.loads(report.read_text())["children"]
    assert [c["how"] for c in children] == ["os.fork", "multiprocessing, fork: ForkPoolWorker-1"]
    for child in children:
        assert f"autograd_lens: in child process {child['pid']} ({child['how']}):" in err
        assert child["parent"] != child["pid"] and child["pattern"] == "backward_twice"
        assert (child["carriers"][0]["name"], child["carriers"][0]["line"]) == ("loss", 15)
    last = err.splitlines()[-1]
    assert last.startswith("autograd_lens: this error happened in child process ") and \
        str(children[1]["pid"]) in last.split(";")[0], last
    assert last.endswith("its diagnosis was said there (above) and is in the report's "
                         "\"children\"; no replay or edit run is made for a child's failure.")


def test_a_forked_child_that_runs_to_the_end_starts_no_replay(tmp_path):
    """Only the command's process replays the failure and runs the edits: the child ending
    through the command's code leaves the parent's re-run alone."""
    code, out, err = run("hard2_forked_goes_on.py", command=())
    assert (code, out) == run("hard2_forked_goes_on.py", command=None)[:2]
    assert err.count("Recorded in a replay") == 1 and "Not recorded" not in err, err
    assert err.count("each suggested edit was run in a sandbox") == 1
    assert "run and verified" in err and "could not run" not in err
