"""The quiz of a scenario notebook as the tests read it: its questions, from the file its quiz cell
names, and how the cell shows them (scripts/quizzes.py writes the cells)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat

from nbtools import QUIZ_FILE
from quizzes import quiz_cell_index


def questions(nb: nbformat.NotebookNode, folder: Path) -> list[dict]:
    """The questions of the notebook's quiz, read from the file its quiz cell names (relative to
    ``folder``, the notebook's folder, as the kernel reads it)."""
    source = nb.cells[quiz_cell_index(nb)].source
    match = QUIZ_FILE.search(source)
    if match is None:
        raise ValueError("the quiz cell names no quizzes/*.json file")
    return json.loads((folder / match.group(1)).read_text())


def shuffled(nb: nbformat.NotebookNode) -> bool:
    """The ``shuffle_answers`` the quiz cell passes (jupyterquiz's default, True, if none)."""
    tree = ast.parse("\n".join(l for l in nb.cells[quiz_cell_index(nb)].source.splitlines()
                               if not l.lstrip().startswith("%")))
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", getattr(n.func, "attr", "")) == "display_quiz")
    return next((ast.literal_eval(k.value) for k in call.keywords if k.arg == "shuffle_answers"), True)


def file_text(questions_list: list[dict]) -> str:
    """A quiz file's text (what jupyterquiz pastes into the page's script)."""
    return json.dumps(questions_list, indent=2, ensure_ascii=False) + "\n"

