"""Write the student copies of the notebooks: `make student` (into student/).

A student copy is the notebook without its solution (the code and prose cells tagged ``solution``)
and without any outputs, so the exercises are open again; the self-check cell after each exercise
stays, and fails until the exercise is solved. The site's exercise markers (sphinx-exercise's
``{exercise-start}`` ... ``{solution-end}`` fences) mean nothing in Jupyter or Colab: the exercise's
opening fence becomes a plain heading, the other fences go. References to other pages of the book
({doc}, and {ref} to a label of another page) become plain links, which read the same in JupyterLab,
Colab and Binder (:class:`CrossReferences`). The kernelspec stays, so the copy opens with the right
kernel. Built from nbconvert preprocessors: TagRemovePreprocessor, ClearOutputPreprocessor,
:class:`ExerciseMarkers` and :class:`CrossReferences` below.

The instructor's copies (``--solutions``, into solutions/, what `make lab-solutions` serves) keep
the solutions and the outputs and change only the references.

    python scripts/student.py [--solutions] [--out DIR] [--zip FILE] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import functools
import posixpath
import re
import shutil
import sys
import zipfile
from pathlib import Path

import nbformat
import yaml
from nbconvert.preprocessors import ClearOutputPreprocessor, Preprocessor, TagRemovePreprocessor

from nbtools import META_KEY, NOTEBOOKS, ROOT, notebook_paths, published_url, toc_files

SUPPORT = NOTEBOOKS / "scripts"  # files the notebooks run (notebook 21's training script)
QUIZZES = NOTEBOOKS / "quizzes"  # the quizzes' questions, which each quiz cell reads (scripts/quizzes.py)

SOLUTION_TAG = "solution"
SELF_CHECK_TAG = "self-check"
LINKS_TAG = "student-links"  # the "get the student copy" links: for the book, not for the copy
EXERCISE_HEADING = "### Your turn"

# Where the copies are published: the site serves them under student/ (`make book` writes them
# into _build/html/student/), with the archive of them all.
SITE_FOLDER = "student"
ARCHIVE = "student-notebooks.zip"

# A gated sphinx-exercise fence in MyST markdown: ```{exercise-start}, options such as
# `:label: ex-01`, the closing ```, and the blank lines after it.
MARKER = re.compile(r"^```\{(exercise|solution)-(start|end)\}[^\n]*\n(?:[^\n`]*\n)*?```[ \t]*(?:\n+|\Z)",
                    re.MULTILINE)


# A cross-reference role of the book: {ref}`label`, {doc}`target`, {term}`word`, each optionally
# `text <target>`.
ROLE = re.compile(r"\{(ref|doc|term)\}`([^`<]*?)\s*(?:<([^>`]+)>)?`")
LABEL = re.compile(r"^\(([\w-]+)\)=[ \t]*\n+(#+)[ \t]+(.+)$", re.MULTILINE)
TITLE = re.compile(r"^#[ \t]+(.+)$", re.MULTILINE)


def _markdown_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return path.read_text()


@functools.lru_cache(maxsize=1)
def book_index() -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The book's pages and labels: ({docname: title}, {label: (docname, heading)}), docnames
    relative to the book's root without suffix (``notebooks/05_rnn_hidden_state``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    titles, labels = {}, {}
    for doc in [toc["root"], *toc_files(toc)]:
        path = next((ROOT / f"{doc}{suffix}" for suffix in (".ipynb", ".md") if (ROOT / f"{doc}{suffix}").is_file()), None)
        if path is None:
            continue
        text = _markdown_of(path)
        title = TITLE.search(text)
        titles[doc] = title.group(1).strip() if title else doc
        for label, _, heading in LABEL.findall(text):
            labels[label] = (doc, heading.strip())
    return titles, labels


class CrossReferences(Preprocessor):
    """References to other pages of the book, as links that work outside the book's build.

    jupyterlab-myst resolves a ``{ref}`` only to a label of the same notebook, and shows a
    ``{doc}`` as the target's name: in JupyterLab, Colab or Binder a reference to another page
    would read as a bare label or file name. Each one becomes a Markdown link with the text the
    site shows (the page's or section's title, or the reference's own text): to the sibling
    notebook for a scenario page (the copies sit side by side), otherwise to the published page.
    References within the notebook stay as they are."""

    def __init__(self, notebook: Path, **kw):
        super().__init__(**kw)
        self.docname = notebook.resolve().relative_to(ROOT).with_suffix("").as_posix()
        self.titles, self.labels = book_index()
        self.site = published_url()

    def _link(self, match: re.Match, local: set[str]) -> str:
        role, text, target = match.group(1), match.group(2).strip(), match.group(3)
        target = (target or text).strip()
        if role == "ref":
            if target in local or target not in self.labels:
                return match.group(0)
            doc, heading = self.labels[target]
            return f"[{text if match.group(3) else heading}]({self.site}{doc}.html#{re.sub(r'^[^A-Za-z]+', '', target)})"
        if role == "term":
            anchor = "term-" + re.sub(r"[^a-z0-9]+", "-", target.lower()).strip("-")
            return f"[{text}]({self.site}chapters/glossary.html#{anchor})"
        doc = posixpath.normpath(target.lstrip("/") if target.startswith("/")
                                 else posixpath.join(posixpath.dirname(self.docname), target))
        if doc not in self.titles:
            return match.group(0)
        shown = text if match.group(3) else self.titles[doc]
        if posixpath.dirname(doc) == posixpath.dirname(self.docname) == NOTEBOOKS.name:
            return f"[{shown}]({posixpath.basename(doc)}.ipynb)"
        return f"[{shown}]({self.site}{doc}.html)"

    def preprocess(self, nb, resources):
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        local = {label for label, _, _ in LABEL.findall(markdown)}
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = ROLE.sub(lambda m: self._link(m, local), cell.source)
        return nb, resources


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


def student_copy(nb: nbformat.NotebookNode, path: Path | None = None) -> nbformat.NotebookNode:
    """The notebook without its solution, markers and outputs (a new object; ``nb`` is unchanged).
    Given the notebook's ``path``, its references to other pages become links (:class:`CrossReferences`)."""
    nb = nbformat.from_dict(nb)  # a deep copy
    resources: dict = {}
    steps = [TagRemovePreprocessor(enabled=True, remove_cell_tags={SOLUTION_TAG, LINKS_TAG}),
             ExerciseMarkers(), ClearOutputPreprocessor(enabled=True)]
    for step in steps + ([CrossReferences(path)] if path is not None else []):
        nb, resources = step.preprocess(nb, resources)
    nb.metadata.pop(META_KEY, None)  # the digest of the full notebook's code means nothing here
    return nb


def solution_copy(nb: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    """The notebook as the book has it (solutions, outputs), its references to other pages as links:
    the instructor's copy, which `make lab-solutions` serves (so running it leaves the book's stored
    outputs alone)."""
    nb = nbformat.from_dict(nb)
    nb, _ = CrossReferences(path).preprocess(nb, {})
    return nb


def write_student_copies(paths: list[Path], out: Path, solutions: bool = False) -> list[Path]:
    """Write a student copy (or with ``solutions``, the instructor's copy) of each notebook into
    ``out``, and beside them the files the notebooks run (``notebooks/scripts/``) and the quizzes
    they show (``notebooks/quizzes/``); return the notebooks written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        target = out / path.name
        nbformat.write(solution_copy(nb, path) if solutions else student_copy(nb, path), target)
        written.append(target)
    for folder in (SUPPORT, QUIZZES):
        if folder.is_dir():
            shutil.copytree(folder, out / folder.name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
    return written


def write_archive(copies: list[Path], archive: Path, folder: str = "student") -> Path:
    """One zip of the copies and the files they run, under ``folder/`` (unpacking makes one folder)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    support = sorted({f for copy in copies for folder in (SUPPORT, QUIZZES)
                      for f in (copy.parent / folder.name).rglob("*") if f.is_file()})
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for copy in copies:
            z.write(copy, f"{folder}/{copy.name}")
        for f in support:
            z.write(f, f"{folder}/{f.relative_to(copies[0].parent)}")
    return archive


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the copies (default: student/, or solutions/)")
    parser.add_argument("--solutions", action="store_true",
                        help="write the instructor's copies instead: solutions and outputs kept, "
                             "references to other pages as links (default folder: solutions/)")
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
    out = args.out or ROOT / ("solutions" if args.solutions else "student")
    written = write_student_copies(paths, out, solutions=args.solutions)
    where = out.resolve()
    shown = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
    print(f"{len(written)} {'instructor' if args.solutions else 'student'} notebooks in {shown}/ "
          + ("(solutions and outputs kept)" if args.solutions else "(solutions and outputs removed)"))
    if args.zip:
        print(f"archive: {write_archive(written, args.zip)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
