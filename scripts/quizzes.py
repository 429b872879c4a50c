"""The predict-then-run quizzes: their questions live in files, not in the notebook a student reads.

    python scripts/quizzes.py           # write every scenario's quiz cell; prints what changed
    python scripts/quizzes.py --check   # change nothing; exit 1 and say what differs

Each scenario notebook has one quiz cell (tagged ``quiz``). Its questions, options, which option is
right and every option's feedback are in ``notebooks/quizzes/<notebook>.json`` (jupyterquiz's own
format), which the cell hands to ``display_quiz`` by name: no cell of the notebook, and no output a
reader sees, spells out the right option. The cell's source is hidden too: by the ``remove-input``
tag on the site, by ``jupyter.source_hidden`` in JupyterLab and Jupyter Notebook, and as a form
(``cellView``, with its ``@title``) in Colab. A notebook runs beside its quiz files (the student
copies carry them, ``scripts/student.py``); where they are missing (a notebook opened in Colab
from GitHub) the cell reads the same file from the published site, which serves the student copies.

Editing a quiz means editing its JSON file and then ``make refresh NB=...``: the stored output of
the quiz cell holds the questions the site shows, and ``make book``'s check of the stored outputs
(``scripts/nbtools.py --check``) fails when it no longer matches the file.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import nbformat

from nbtools import NOTEBOOKS, ROOT, notebook_paths, published_url, rewrite
from student import SITE_FOLDER

TAG = "quiz"
FOLDER = "quizzes"
TAGS = ["quiz", "remove-input", "nbval-ignore-output"]

SOURCE = """\
# @title Predict, then run: run this cell for the quiz
# The questions are in {path}, beside this notebook (Colab reads the published copy).
import os
from jupyterquiz import display_quiz

QUIZ = "{path}"
PUBLISHED = "{remote}"
display_quiz(QUIZ if os.path.isfile(QUIZ) else PUBLISHED + QUIZ, shuffle_answers=False)"""


def remote_folder() -> str:
    """Where the published quiz files are: the site's folder of student copies."""
    return f"{published_url()}{SITE_FOLDER}/"


def quiz_path(notebook: Path) -> Path:
    """The quiz file of a scenario notebook (beside it, in quizzes/)."""
    return notebook.parent / FOLDER / f"{notebook.stem}.json"


def cell_source(notebook: Path) -> str:
    return SOURCE.format(path=f"{FOLDER}/{notebook.stem}.json", remote=remote_folder())


def quiz_cell_index(nb: nbformat.NotebookNode) -> int:
    """The index of the notebook's one quiz cell."""
    found = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and TAG in c.metadata.get("tags", [])]
    if len(found) != 1:
        raise ValueError(f"{len(found)} cells tagged {TAG!r} (one is wanted)")
    return found[0]


def write_quiz_cell(nb: nbformat.NotebookNode, notebook: Path) -> bool:
    """Make the quiz cell read its file, with its source hidden everywhere; True if changed."""
    cell = nb.cells[quiz_cell_index(nb)]
    before = (cell.source, copy.deepcopy(dict(cell.metadata)))
    cell.source = cell_source(notebook)
    cell.metadata["tags"] = list(TAGS)
    cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    cell.metadata["cellView"] = "form"  # Colab: show the @title, hide the code
    return (cell.source, dict(cell.metadata)) != before


def main(argv: list[str]) -> int:
    check = "--check" in argv
    scenarios = [p for p in notebook_paths() if p.parent == NOTEBOOKS]
    missing = [p for p in scenarios if not quiz_path(p).is_file()]
    changed = rewrite([p for p in scenarios if p not in missing], write_quiz_cell, check)
    problems = [f"{p.relative_to(ROOT)}: no quiz file {quiz_path(p).relative_to(ROOT)}" for p in missing]
    problems += [f"{p.relative_to(ROOT)}: its quiz cell " + ("differs" if check else "rewritten")
                 for p in changed]
    print("\n".join(problems) or "every quiz cell reads its quiz file")
    return 1 if check and problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
