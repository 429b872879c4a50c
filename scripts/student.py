"""Write the student copies of the notebooks: `make student` (into student/).

A student copy is the notebook without its solution (the code and prose cells tagged ``solution``)
and without any outputs, so the exercises are open again; the self-check cell after each exercise
stays, and fails until the exercise is solved. The site's exercise markers (sphinx-exercise's
``{exercise-start}`` ... ``{solution-end}`` fences) mean nothing in Jupyter or Colab: the exercise's
opening fence becomes a plain heading, the other fences go. The kernelspec stays, so the copy opens
with the right kernel. Built from nbconvert preprocessors: TagRemovePreprocessor,
ClearOutputPreprocessor and :class:`ExerciseMarkers` below.

    python scripts/student.py [--out DIR] [--zip FILE] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tomllib
import zipfile
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearOutputPreprocessor, Preprocessor, TagRemovePreprocessor

from nbtools import META_KEY, NOTEBOOKS, ROOT, notebook_paths

SUPPORT = NOTEBOOKS / "scripts"  # files the notebooks run (notebook 21's training script)

SOLUTION_TAG = "solution"
SELF_CHECK_TAG = "self-check"
LINKS_TAG = "student-links"  # the "get the student copy" links: for the book, not for the copy
EXERCISE_HEADING = "### Your turn"

# Where the copies are published. The site serves them under student/ (`make book` writes them
# into _build/html/student/), and the Pages workflow pushes the same files to the branch
# STUDENT_BRANCH, which is what Colab opens from GitHub.
SITE_FOLDER = "student"
ARCHIVE = "student-notebooks.zip"
STUDENT_BRANCH = "student-copies"

# A gated sphinx-exercise fence in MyST markdown: ```{exercise-start}, options such as
# `:label: ex-01`, the closing ```, and the blank lines after it.
MARKER = re.compile(r"^```\{(exercise|solution)-(start|end)\}[^\n]*\n(?:[^\n`]*\n)*?```[ \t]*(?:\n+|\Z)",
                    re.MULTILINE)


def repository_url() -> str:
    """The repository's address, from its one place: pyproject.toml's [project.urls]."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["urls"]["Repository"].rstrip("/")


def colab_url(name: str) -> str:
    """Colab's address for the published student copy of the notebook ``name``."""
    owner_repo = repository_url().removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{STUDENT_BRANCH}/{name}"


def links_markdown(name: str, prefix: str = "../") -> str:
    """The markdown of the links to a notebook's student copy, as its exercise shows them (plain
    HTML anchors: the copies are files of the site, not pages the book's build knows)."""
    folder = f"{prefix}{SITE_FOLDER}"
    return (f'**Work on it in a student copy** (no solution, the same self-check): '
            f'<a href="{folder}/{name}" download>download this notebook</a>, '
            f'<a href="{colab_url(name)}">open it in Colab</a>, or '
            f'<a href="{folder}/{ARCHIVE}" download>all the student copies (zip)</a>.')


def _plain(match: re.Match) -> str:
    return f"{EXERCISE_HEADING}\n\n" if match.group(1, 2) == ("exercise", "start") else ""


class ExerciseMarkers(Preprocessor):
    """Turn the exercise's opening fence into a plain heading, drop the other fences, and drop the
    markdown cells left empty."""

    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = MARKER.sub(_plain, cell.source).strip("\n")
        return cell, resources


def student_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without its solution, markers and outputs (a new object; ``nb`` is unchanged)."""
    nb = nbformat.from_dict(nb)  # a deep copy
    resources: dict = {}
    for step in (TagRemovePreprocessor(enabled=True, remove_cell_tags={SOLUTION_TAG, LINKS_TAG}),
                 ExerciseMarkers(), ClearOutputPreprocessor(enabled=True)):
        nb, resources = step.preprocess(nb, resources)
    nb.metadata.pop(META_KEY, None)  # the digest of the full notebook's code means nothing here
    return nb


def write_student_copies(paths: list[Path], out: Path) -> list[Path]:
    """Write a student copy of each notebook into ``out``, and beside them the files the notebooks
    run (``notebooks/scripts/``); return the notebooks written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        target = out / path.name
        nbformat.write(student_copy(nb), target)
        written.append(target)
    if SUPPORT.is_dir():
        shutil.copytree(SUPPORT, out / SUPPORT.name, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return written


def write_archive(copies: list[Path], archive: Path, folder: str = "student") -> Path:
    """One zip of the copies and the files they run, under ``folder/`` (unpacking makes one folder)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    support = sorted({f for copy in copies for f in (copy.parent / SUPPORT.name).rglob("*") if f.is_file()})
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for copy in copies:
            z.write(copy, f"{folder}/{copy.name}")
        for f in support:
            z.write(f, f"{folder}/{f.relative_to(copies[0].parent)}")
    return archive


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "student",
                        help="where to write the copies (default: student/)")
    parser.add_argument("--zip", type=Path, default=None,
                        help="also write all the copies into this zip archive")
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to copy (default: every scenario notebook)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.notebooks if not p.is_file()]
    if missing:
        print(f"student.py: no such notebook: {missing[0]}", file=sys.stderr)
        return 2
    paths = [p.resolve() for p in args.notebooks] or [p for p in notebook_paths() if p.parent == NOTEBOOKS]
    written = write_student_copies(paths, args.out)
    where = args.out.resolve()
    shown = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
    print(f"{len(written)} student notebooks in {shown}/ (solutions and outputs removed)")
    if args.zip:
        print(f"archive: {write_archive(written, args.zip)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
