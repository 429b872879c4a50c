"""The command's fix as an edit of the user's own lines, on every failing script of tests/scripts/
and on the book's LSTM script: the JSON report's "edits", applied bottom-up by this test, give
a program that runs clean; --verify says so too, from a temporary copy, without writing into
the script's folder; the exit code stays the first run's; healthy runs print nothing extra.

One Python process runs every script through the command's own main() in turn (each
--verify starts one more process, the re-run itself).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograd_lens.edits import Edit, apply

ROOT = Path(__file__).parent.parent
SCRIPTS = Path(__file__).parent / "scripts"
FAILING = [p.name for p in sorted(SCRIPTS.glob("fail_*.py"))] + [
    "fail_18_checkpoint.py reentrant", "-m demo_pkg.train one --two",
    str(ROOT / "notebooks" / "scripts" / "train_rnn.py") + " --epochs 1"]
HEALTHY = ["ok_fixed_loops.py"]

DRIVER = """
import contextlib, io, json, linecache, os, runpy, sys, tempfile
from autograd_lens.__main__ import main
from autograd_lens.edits import Edit, apply, by_file
results = {}
for spec in json.loads(sys.argv[1]):
    words = spec.split()
    report = os.path.join(sys.argv[2], str(len(results)) + ".json")
    out, err = io.StringIO(), io.StringIO()
    saved_path, saved_argv = list(sys.path), list(sys.argv)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--report", report, "--verify"] + words)
        except SystemExit as leaving:
            code = leaving.code
    sys.path[:], sys.argv[:] = saved_path, saved_argv
    data = json.load(open(report))
    # Apply the report's edits (bottom-up, file by file) to copies, and run the fixed program.
    edits = [Edit(e["file"], e["line"], e["old"], tuple(e["new"])) for e in data["edits"]]
    fixed_error = "no edits"
    if edits and words[0] != "-m":
        folder = tempfile.mkdtemp()
        script = os.path.abspath(words[0])
        copies = {}
        for file, group in by_file(edits).items():
            copies[file] = os.path.join(folder, os.path.basename(file))
            open(copies[file], "w").writelines(apply(group, linecache.getlines(file)))
        sys.argv, sys.path[0] = words, os.path.dirname(script)
        fixed_error = None
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                runpy.run_path(copies.get(script, script), run_name="__main__")
            except BaseException as caught:
                fixed_error = repr(caught)
        sys.path[:], sys.argv[:] = saved_path, saved_argv
    results[spec] = {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
                     "report": data, "fixed_error": fixed_error}
print(json.dumps(results))
"""


def _snapshot(folder: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in folder.rglob("*")
            if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reports")
    before = _snapshot(SCRIPTS)
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(FAILING + HEALTHY),
                           str(folder)], cwd=SCRIPTS, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1]), before, _snapshot(SCRIPTS)


@pytest.mark.parametrize("spec", FAILING, ids=lambda s: s.split()[0].split("/")[-1]
                         + ("_reentrant" if "reentrant" in s else ""))
def test_the_edit_makes_the_failing_script_run_clean_and_verify_says_so(runs, spec):
    found = runs[0][spec]
    report = found["report"]
    assert found["code"] == 1  # the first run's exit code, whatever the re-run did
    assert report["edits"], f"no edit for {spec}"
    assert report["computes"]
    if not spec.startswith("-m"):
        assert found["fixed_error"] is None, found["fixed_error"]
    assert report["verified"]["ran"] is True and report["verified"]["error"] is None
    assert report["verified"]["backward_calls"] >= 1
    err = found["stderr"]
    assert "The fix as an edit of your program (" in err and "\n+++ " in err
    assert "\nautograd_lens: ran the suggested edit: " in err
    assert err.index("\nSee: ") < err.index("The fix as an edit") < err.index("ran the suggested")
    assert len(report["alternatives"]) == len(report["alternatives_computes"])


def test_the_edits_name_the_files_and_lines_as_the_traceback_shows_them(runs):
    for spec, found in runs[0].items():
        for edit in found["report"]["edits"]:
            assert Path(edit["file"]).is_file(), spec
            lines = Path(edit["file"]).read_text().splitlines()
            assert lines[edit["line"] - 1] == edit["old"], spec
            assert isinstance(edit["new"], list)


def test_the_lstm_tuple_state_gets_a_tuple_edit(runs):
    report = runs[0][FAILING[-1]]["report"]
    assert report["pattern"] == "hidden_state"
    new = [line.strip() for e in report["edits"] for line in e["new"]]
    assert "state = tuple(s.detach() for s in state)" in new
    assert "if state is not None:" in new  # state starts as None in that script


def test_verify_writes_nothing_into_the_scripts_folder(runs):
    _, before, after = runs
    assert before == after


def test_a_healthy_script_prints_nothing_extra_and_is_not_rerun(runs):
    found = runs[0]["ok_fixed_loops.py"]
    assert found["code"] == 0 and found["stderr"] == ""
    assert found["report"]["edits"] == [] and found["report"]["verified"] is None


def test_edits_apply_bottom_up_and_check_the_old_text():
    lines = ["a\n", "b\n", "c\n"]
    edits = [Edit("f.py", 1, "a", ("x", "a")), Edit("f.py", 3, "c", ())]
    assert apply(edits, lines) == ["x\n", "a\n", "b\n"]
    with pytest.raises(ValueError, match="line 2 of f.py"):
        apply([Edit("f.py", 2, "not b", ("y",))], lines)


def test_the_help_says_verify_reruns_side_effects():
    done = subprocess.run([sys.executable, "-m", "autograd_lens", "--help"], capture_output=True,
                          text=True, timeout=300)
    text = " ".join(done.stdout.split())
    assert "--verify" in text and "repeats the program's side effects" in text
    assert "not that the edit computes what you meant" in text


def test_verify_reports_an_edit_that_does_not_fix_the_error(tmp_path):
    from autograd_lens.verify import describe, verify

    script = SCRIPTS / "fail_01_backward_twice.py"
    line = script.read_text().splitlines()[8]
    assert line.startswith("loss.backward()")
    no_fix = [Edit(str(script), 9, line, ("# still the same", line))]
    before = _snapshot(SCRIPTS)
    verified = verify(no_fix, None, [str(script)], calls_before=1)
    assert verified["ran"] is True and verified["backward_calls"] == 1
    assert verified["error"].startswith("RuntimeError: Trying to backward through the graph")
    assert "it still fails, after 1 backward call" in describe(verified, 1)
    assert _snapshot(SCRIPTS) == before
    nothing = verify([], None, [str(script)], calls_before=1)
    assert nothing == {"ran": False, "backward_calls": 0, "error": "no edit was derived to run"}
