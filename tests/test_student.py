"""Student copies (`make student`): produced from every scenario notebook, without solutions or
outputs, and they still run top to bottom.

Running them is kept cheap: one Python process runs every copy, each in a fresh IPython namespace,
so torch is imported once instead of once per kernel. The full notebooks are already executed by
strict nbval; what this adds is the proof that nothing outside the solution cells depends on them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest

from nbtools import NOTEBOOKS, ROOT
from student import SOLUTION_TAG, student_copy, write_student_copies

SCENARIOS = sorted(NOTEBOOKS.glob("*.ipynb"))
RAISES = {"raises-exception", "nbval-raises-exception"}

# Runs each notebook given on the command line in a fresh namespace of one IPython shell and prints,
# as JSON, what went wrong: an error in a cell not tagged to raise, other than NotImplementedError
# (the "your code here" of an exercise).
RUNNER = r"""
import io, json, os, sys, contextlib
import nbformat
from IPython.core.interactiveshell import InteractiveShell

class Shell(InteractiveShell):
    def enable_gui(self, gui=None):  # `%matplotlib inline` outside a kernel: nothing to set up
        pass

shell = Shell.instance(colors="nocolor")
report = {}
for path in sys.argv[1:]:
    shell.reset(new_session=True)
    shell.run_cell("import matplotlib; matplotlib.use('Agg')", silent=True)
    nb = nbformat.read(path, as_version=4)
    problems = []
    for number, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        tags = set(cell.metadata.get("tags", []))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = shell.run_cell(cell.source, silent=False, store_history=False)
        error = result.error_in_exec or result.error_before_exec
        if error is None or tags & {"raises-exception", "nbval-raises-exception"}:
            continue
        if isinstance(error, NotImplementedError):
            continue
        problems.append(f"cell {number} raised {type(error).__name__}: {str(error)[:300]}")
    shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')", silent=True)
    report[os.path.basename(path)] = problems
print("STUDENT-REPORT " + json.dumps(report))
"""


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    return write_student_copies(SCENARIOS, out)


def test_a_copy_of_every_scenario_notebook_is_written(copies):
    assert [p.name for p in copies] == [p.name for p in SCENARIOS]
    assert all(p.exists() for p in copies)


def test_copies_have_no_solutions_no_outputs_and_keep_the_kernelspec(copies):
    for original, copy in zip(SCENARIOS, copies):
        full = nbformat.read(original, as_version=4)
        nb = nbformat.read(copy, as_version=4)
        assert not [c for c in nb.cells if SOLUTION_TAG in c.metadata.get("tags", [])], copy.name
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), copy.name
        assert nb.metadata.kernelspec == full.metadata.kernelspec, copy.name
        removed = sum(SOLUTION_TAG in c.metadata.get("tags", []) for c in full.cells)
        assert len(nb.cells) == len(full.cells) - removed, copy.name
        exercise = "{exercise-start}" in "".join(c.source for c in full.cells if c.cell_type == "markdown")
        if exercise:  # the exercise text stays, only its solution goes
            assert removed > 0, f"{original.name} has an exercise but no cell tagged {SOLUTION_TAG!r}"
            assert any("{exercise-start}" in c.source for c in nb.cells), copy.name


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_every_scenario_has_an_exercise_and_a_solution_to_remove(path):
    """The gated sphinx-exercise form, in markdown cells and in this order, around code cells; the
    solution's code cells tagged `solution`. (A directive left inside a code cell, as a comment,
    breaks the book's build with a message that names no cell.)"""
    nb = nbformat.read(path, as_version=4)
    order = ["{exercise-start}", "{exercise-end}", "{solution-start}", "{solution-end}"]
    found = [(i, d) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
             for d in order if d in c.source]
    assert [d for _, d in found] == order, (
        f"{path.name}: expected the markdown directives {order} in this order, found "
        f"{[d for _, d in found]}")
    stray = [i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and any(d in c.source for d in order)]
    assert not stray, f"{path.name}: exercise directives inside code cells {stray}: make them markdown"
    start, end = found[2][0], found[3][0]
    solution_code = [c for c in nb.cells[start:end] if c.cell_type == "code"]
    assert solution_code and all(SOLUTION_TAG in c.metadata.get("tags", []) for c in solution_code), (
        f"{path.name}: every code cell of the solution must be tagged {SOLUTION_TAG!r}")


def test_student_copy_removes_exactly_the_tagged_cells():
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "P",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("a = 1", execution_count=1,
                                          outputs=[nbformat.v4.new_output("stream", text="x")]),
                nbformat.v4.new_code_cell("a = 2", metadata={"tags": [SOLUTION_TAG]}),
                nbformat.v4.new_markdown_cell("text", metadata={"tags": ["other"]})]
    copy = student_copy(nb)
    assert [c.source for c in copy.cells] == ["a = 1", "text"]
    assert copy.cells[0].outputs == [] and copy.cells[0].execution_count is None
    assert len(nb.cells) == 3 and nb.cells[0].outputs  # the original is untouched


def test_student_copies_run(copies):
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-c", RUNNER, *map(str, copies)], capture_output=True,
                            text=True, timeout=600, cwd=copies[0].parent, env=env)
    lines = [l for l in result.stdout.splitlines() if l.startswith("STUDENT-REPORT ")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(lines[-1].split(" ", 1)[1])
    assert set(report) == {p.name for p in copies}
    failures = {name: problems for name, problems in report.items() if problems}
    assert failures == {}, json.dumps(failures, indent=1)


def test_make_student_writes_into_the_gitignored_folder():
    assert "student/" in (ROOT / ".gitignore").read_text().split()
