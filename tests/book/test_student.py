"""Student copies (`make student`) and the exercises' self-checks.

A student copy is produced from every scenario notebook, without any solution (code or prose),
without the site's exercise markers, without outputs, and it still runs top to bottom. Every
exercise has a self-check cell, and the self-checks are proven by running them: on the book's own
notebook (the solution ran before it) each one passes, on the unsolved student copy each one fails
with an AssertionError whose message says what is still wrong.

Each notebook is executed once per test run for each of the two: the book's notebook by strict
nbval (`make test-notebooks`, whose run of the self-check this file makes sure of), the student copy
here. One Python process runs all the student copies, each in a fresh IPython namespace, so torch
is imported once instead of once per kernel. The scenario notebooks are those of the table of
contents (`_toc.yml`) in notebooks/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile

import nbformat
import pytest

import quiz_files
import quizzes
from nbtools import NOTEBOOKS, ROOT, notebook_paths
from student import (ARCHIVE, EXERCISE_HEADING, LINKS_TAG, SELF_CHECK_TAG, SOLUTION_TAG, main, student_copy,
                     write_archive, write_student_copies)
from student_links import binder_url, colab_url, links_markdown

SCENARIOS = [p for p in notebook_paths() if p.parent == NOTEBOOKS]
# Tags with which nbval would not run a cell, or would accept an error or any output from it.
NBVAL_EXEMPT = {"nbval-skip", "skip-execution", "raises-exception", "nbval-raises-exception",
                "nbval-ignore-output"}
MARKERS = ("{exercise-start}", "{exercise-end}", "{solution-start}", "{solution-end}")

# Runs each notebook given on the command line in a fresh namespace of one IPython shell and prints,
# as JSON, per notebook: the problems (an error in a cell neither tagged to raise nor a self-check,
# other than NotImplementedError, the "your code here" of an exercise) and the outcome of every
# self-check cell (the error's type and message, or null when it passed).
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
    problems, checks = [], []
    for number, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        tags = set(cell.metadata.get("tags", []))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = shell.run_cell(cell.source, silent=False, store_history=False)
        error = result.error_in_exec or result.error_before_exec
        if "self-check" in tags:
            checks.append(None if error is None else [type(error).__name__, str(error)])
            continue
        if error is None or tags & {"raises-exception", "nbval-raises-exception"}:
            continue
        if isinstance(error, NotImplementedError):
            continue
        problems.append(f"cell {number} raised {type(error).__name__}: {str(error)[:300]}")
    shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')", silent=True)
    report[os.path.basename(path)] = {"problems": problems, "checks": checks}
print("STUDENT-REPORT " + json.dumps(report))
"""


def run_notebooks(paths, cwd) -> dict:
    """Run the notebooks with RUNNER; return its report."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-c", RUNNER, *map(str, paths)], capture_output=True,
                            text=True, timeout=900, cwd=cwd, env=env)
    lines = [l for l in result.stdout.splitlines() if l.startswith("STUDENT-REPORT ")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(lines[-1].split(" ", 1)[1])
    assert set(report) == {p.name for p in paths}
    return report


def tags(cell) -> set[str]:
    return set(cell.metadata.get("tags", []))


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
        assert not [c for c in nb.cells if SOLUTION_TAG in tags(c)], copy.name
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), copy.name
        assert nb.metadata.kernelspec == full.metadata.kernelspec, copy.name
        kept = [c.source for c in full.cells if c.cell_type == "code" and SOLUTION_TAG not in tags(c)]
        assert [c.source for c in code] == kept, f"{copy.name}: code outside the solution changed"


def test_copies_contain_no_line_of_any_solution(copies):
    """Every line that only a solution cell has (code or prose) is absent from the student copy."""
    for original, copy in zip(SCENARIOS, copies):
        full = nbformat.read(original, as_version=4)
        elsewhere = {l.strip() for c in full.cells if SOLUTION_TAG not in tags(c)
                     for l in c.source.splitlines()}
        solution_only = {l.strip() for c in full.cells if SOLUTION_TAG in tags(c)
                         for l in c.source.splitlines()} - elsewhere - {""}
        assert len(solution_only) >= 2, f"{original.name}: its solution has no text of its own"
        text = "\n".join(l.strip() for c in nbformat.read(copy, as_version=4).cells
                         for l in c.source.splitlines())
        leaked = sorted(l for l in solution_only if l in text.splitlines())
        assert not leaked, f"{copy.name} still shows solution lines: {leaked[:3]}"


def test_copies_show_no_raw_markers_and_a_plain_heading(copies):
    for copy in copies:
        nb = nbformat.read(copy, as_version=4)
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        raw = [m for m in (*MARKERS, ":label: ex-", ":class: dropdown") if m in markdown]
        assert not raw, f"{copy.name} shows raw exercise markers: {raw}"
        assert markdown.count(EXERCISE_HEADING) == 1, copy.name
        assert not [c for c in nb.cells if c.cell_type == "markdown" and not c.source.strip()], copy.name


def test_every_exercise_has_one_self_check_after_it_in_book_and_copy(copies):
    for original, copy in zip(SCENARIOS, copies):
        for nb, name in ((nbformat.read(original, as_version=4), original.name),
                         (nbformat.read(copy, as_version=4), copy.name)):
            checks = [i for i, c in enumerate(nb.cells) if SELF_CHECK_TAG in tags(c)]
            assert len(checks) == 1 and nb.cells[checks[0]].cell_type == "code", name
            assert not tags(nb.cells[checks[0]]) & {"raises-exception", SOLUTION_TAG}, name
            before = "".join(c.source for c in nb.cells[:checks[0]])
            assert "{exercise-start}" in before or EXERCISE_HEADING in before, name


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_every_scenario_has_an_exercise_and_a_solution_to_remove(path):
    """The gated sphinx-exercise form, in markdown cells and in this order, around code cells; every
    cell of the solution (code and prose) tagged `solution`. (A directive left inside a code cell,
    as a comment, breaks the book's build with a message that names no cell.)"""
    nb = nbformat.read(path, as_version=4)
    found = [(i, d) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
             for d in MARKERS if d in c.source]
    assert [d for _, d in found] == list(MARKERS), (
        f"{path.name}: expected the markdown directives {list(MARKERS)} in this order, found "
        f"{[d for _, d in found]}")
    stray = [i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and any(d in c.source for d in MARKERS)]
    assert not stray, f"{path.name}: exercise directives inside code cells {stray}: make them markdown"
    start, end = found[2][0], found[3][0]
    inside = nb.cells[start + 1:end]
    assert inside and all(SOLUTION_TAG in tags(c) for c in inside), (
        f"{path.name}: every cell between solution-start and solution-end must be tagged {SOLUTION_TAG!r}")
    assert any(c.cell_type == "code" for c in inside), f"{path.name}: the solution has no code"


def test_student_copy_removes_solutions_and_markers():
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "P",
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_markdown_cell("## Exercise\n\n```{exercise-start}\n:label: ex-1\n```\n\nDo it."),
                nbformat.v4.new_code_cell("a = 1", execution_count=1,
                                          outputs=[nbformat.v4.new_output("stream", text="x")]),
                nbformat.v4.new_markdown_cell("```{exercise-end}\n```\n\n```{solution-start} ex-1\n"
                                              ":class: dropdown\n```"),
                nbformat.v4.new_markdown_cell("Why it works.", metadata={"tags": [SOLUTION_TAG]}),
                nbformat.v4.new_code_cell("a = 2", metadata={"tags": [SOLUTION_TAG]}),
                nbformat.v4.new_markdown_cell("```{solution-end}\n```\n\n**Self-check.**"),
                nbformat.v4.new_code_cell("assert a == 2", metadata={"tags": [SELF_CHECK_TAG]})]
    copy = student_copy(nb)
    assert [c.source for c in copy.cells] == [f"## Exercise\n\n{EXERCISE_HEADING}\n\nDo it.", "a = 1",
                                              "**Self-check.**", "assert a == 2"]
    assert copy.cells[1].outputs == [] and copy.cells[1].execution_count is None
    assert len(nb.cells) == 7 and nb.cells[1].outputs  # the original is untouched


def test_self_checks_fail_on_the_unsolved_student_copies(copies):
    """Run: every copy runs top to bottom, and its self-check fails with a message."""
    report = run_notebooks(copies, copies[0].parent)
    problems = {name: r["problems"] for name, r in report.items() if r["problems"]}
    assert problems == {}, json.dumps(problems, indent=1)
    for name, r in report.items():
        assert len(r["checks"]) == 1, name
        outcome = r["checks"][0]
        assert outcome is not None, f"{name}: the self-check passes on the unsolved copy"
        kind, message = outcome
        assert kind == "AssertionError" and len(message) > 20, (
            f"{name}: the self-check must fail with an AssertionError that says what is wrong, "
            f"got {kind}: {message!r}")


def test_self_checks_pass_on_the_book_notebooks():
    """With the solution in place, every self-check passes (from the sources, not the stored
    outputs). That run is strict nbval's (`make test-notebooks` runs every notebook of the table of
    contents): it fails on an error in a cell not tagged to raise, and on a printed line that differs
    from the stored one. So here: nbval runs every scenario notebook, each self-check cell is one
    it runs and compares, and what it compares with is the self-check's success line."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("\ntest-notebooks:"):].split("\n\n")[0]
    assert "$(NBVAL)" in recipe and "scripts/nbtools.py --reverse" in recipe, recipe
    assert "--nbval " in makefile and "--nbval-lax" not in makefile
    listed = notebook_paths(reverse=True)
    missing = [p.name for p in sorted(NOTEBOOKS.glob("*.ipynb")) if p not in listed]
    assert not missing, f"nbval does not run {missing}: list them in _toc.yml"
    for path in SCENARIOS:
        nb = nbformat.read(path, as_version=4)
        (check,) = [c for c in nb.cells if SELF_CHECK_TAG in tags(c)]
        assert not tags(check) & NBVAL_EXEMPT, f"{path.name}: nbval would not check its self-check"
        # A kernel may hand one print over in more than one stream message; nbval joins them.
        assert {(o.output_type, o.get("name")) for o in check.outputs} == {("stream", "stdout")}, path.name
        printed = "".join(o.text for o in check.outputs)
        assert printed.startswith("self-check passed"), (
            f"{path.name}: the stored self-check output, which nbval compares, is not its success "
            f"line: {printed[:200]!r}")


def test_archive_holds_every_copy_in_one_folder(copies, tmp_path):
    archive = write_archive(copies, tmp_path / "student-notebooks.zip")
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        assert names[:len(copies)] == [f"student/{p.name}" for p in copies]
        # and the files the notebooks run, so that an unpacked copy of notebook 21 runs
        assert names[len(copies):] == sorted(
            [f"student/quizzes/{p.stem}.json" for p in copies] + ["student/scripts/train_rnn.py"])
        nbformat.reads(z.read(f"student/{copies[0].name}").decode(), as_version=4)


def test_the_command_refuses_a_missing_notebook(capsys):
    assert main(["no_such_notebook.ipynb"]) == 2
    assert "no such notebook" in capsys.readouterr().err


def test_every_exercise_links_its_student_copy_from_the_one_repository_address():
    """The links inside each exercise, and the workshop guide's table, are the ones built from
    pyproject.toml's [project.urls] (so they cannot drift from it)."""
    workshop = (ROOT / "chapters" / "workshop.md").read_text()
    assert f'href="../student/{ARCHIVE}"' in workshop
    assert f'href="{binder_url()}"' in workshop, "the workshop guide does not open the copies in Binder"
    for path in SCENARIOS:
        nb = nbformat.read(path, as_version=4)
        links = [i for i, c in enumerate(nb.cells) if LINKS_TAG in tags(c)]
        assert len(links) == 1 and nb.cells[links[0]].source == links_markdown(path.name), (
            f"{path.name}: its student-copy links are missing or stale: regenerate them")
        assert "{exercise-start}" in nb.cells[links[0] - 1].source, path.name
        assert f'href="../student/{path.name}"' in workshop and colab_url(path.name) in workshop, (
            f"the workshop guide does not link the student copy of {path.name}")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_every_scenario_has_one_quiz_before_its_failure(path):
    """One predict-then-run quiz, right before the first cell tagged to raise (where nothing raises:
    before the cell that shows the outcome), whose feedback names the section that proves it."""
    nb = nbformat.read(path, as_version=4)
    found = [i for i, c in enumerate(nb.cells) if "quiz" in tags(c)]
    assert len(found) == 1, f"{path.name}: {len(found)} quiz cells"
    quiz = nb.cells[found[0]]
    assert "display_quiz(" in quiz.source and {"remove-input", "nbval-ignore-output"} <= tags(quiz)
    following = next(c for c in nb.cells[found[0] + 1:] if c.cell_type == "code")
    raising = [c for c in nb.cells if "raises-exception" in tags(c)]
    assert following is (raising[0] if raising else following), f"{path.name}: the quiz is not before the failure"
    assert quiz.outputs, f"{path.name}: the quiz cell has no stored output"
    (question,) = quiz_files.questions(nb, path.parent)
    assert [a["correct"] for a in question["answers"]].count(True) == 1, path.name
    assert all(re.search(r'href="#[a-z][a-z0-9-]*"', a["feedback"]) for a in question["answers"]), (
        f"{path.name}: a feedback without a link to the proof")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_no_cell_spells_out_the_quiz_answer(path):
    """The quiz's questions are in its file (scripts/quizzes.py), not in a cell: no cell of the book's
    notebook or of its student copy names an option or says which one is right, and the quiz cell's
    source is hidden on the site, in JupyterLab and in Colab. Its stored output (what the site
    shows) holds the file's questions, in the script that draws the quiz."""
    nb = nbformat.read(path, as_version=4)
    (question,) = quiz_files.questions(nb, path.parent)
    text = quizzes.quiz_path(path).read_text()
    for book_or_copy in (nb, student_copy(nb)):
        for cell in book_or_copy.cells:
            assert '"correct"' not in cell.source and "correct=" not in cell.source, path.name
            for answer in question["answers"]:
                assert answer["answer"] not in cell.source, f"{path.name}: a cell shows an option"
    quiz = nb.cells[quizzes.quiz_cell_index(nb)]
    assert quiz.source == quizzes.cell_source(path), f"{path.name}: run scripts/quizzes.py"
    assert quiz.metadata["jupyter"]["source_hidden"] and quiz.metadata["cellView"] == "form"
    scripts = [o.data["application/javascript"] for o in quiz.outputs if "application/javascript" in o.get("data", {})]
    assert len(scripts) == 1 and text.rstrip() in scripts[0], f"{path.name}: refresh its stored quiz"


def test_the_quiz_cells_are_written_from_their_one_template():
    assert quizzes.main(["--check"]) == 0


def test_make_student_writes_into_the_gitignored_folder():
    assert "student/" in (ROOT / ".gitignore").read_text().split()


LOCAL_LABEL = re.compile(r"^\(([\w-]+)\)=", re.MULTILINE)
ROLE = re.compile(r"\{(ref|doc|term)\}`([^`]*)`")


def test_copies_reference_other_pages_by_links_that_work_outside_the_book(copies, tmp_path):
    """jupyterlab-myst resolves a {ref} only to a label of the same notebook and shows a {doc} as a
    file name: in the copies (student and instructor's), each reference to another page is a link
    with the title the site shows, to the sibling copy or to the published page."""
    instructor = write_student_copies(SCENARIOS, tmp_path / "solutions", solutions=True)
    linked = 0
    for copy in copies + instructor:
        markdown = "\n".join(c.source for c in nbformat.read(copy, as_version=4).cells if c.cell_type == "markdown")
        local = set(LOCAL_LABEL.findall(markdown))
        for role, body in ROLE.findall(markdown):
            target = re.search(r"<([^>]+)>$", body)
            assert role == "ref" and (target.group(1) if target else body) in local, (
                f"{copy.parent.name}/{copy.name}: {{{role}}}`{body}` left for JupyterLab")
        for target in re.findall(r"\]\((\d\d_\w+\.ipynb)\)", markdown):
            assert (copy.parent / target).is_file(), f"{copy.name} links {target}, which is not beside it"
            linked += 1
        assert "](https://through-the-graph.github.io/" in markdown or "{doc}" not in markdown
    assert linked > 50  # the scenario pages link each other often ({doc} in the book)
    book = nbformat.read(SCENARIOS[9], as_version=4)
    theirs = nbformat.read(instructor[9], as_version=4)
    assert [c.outputs for c in theirs.cells if c.cell_type == "code"] == [
        c.outputs for c in book.cells if c.cell_type == "code"], "the instructor's copy keeps the outputs"
    assert sum(SOLUTION_TAG in tags(c) for c in theirs.cells) == sum(SOLUTION_TAG in tags(c) for c in book.cells) > 0
    assert "[When the version check does not protect you](" in "\n".join(c.source for c in theirs.cells)

