"""Write the student copies of the notebooks: `make student` (into student/).

A student copy is the notebook without the cells tagged ``solution`` and without any outputs, so
the exercises are open again; the kernelspec stays, so it opens with the right kernel. Uses
nbconvert's own preprocessors (TagRemovePreprocessor, ClearOutputPreprocessor).

    python scripts/student.py [--out DIR] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearOutputPreprocessor, TagRemovePreprocessor

from nbtools import META_KEY, NOTEBOOKS, ROOT

SOLUTION_TAG = "solution"


def student_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without its solution cells and outputs (a new object; ``nb`` is unchanged)."""
    nb = nbformat.from_dict(nb)  # a deep copy
    resources: dict = {}
    remove = TagRemovePreprocessor(enabled=True, remove_cell_tags={SOLUTION_TAG})
    nb, resources = remove.preprocess(nb, resources)
    nb, resources = ClearOutputPreprocessor(enabled=True).preprocess(nb, resources)
    nb.metadata.pop(META_KEY, None)  # the digest of the full notebook's code means nothing here
    return nb


def write_student_copies(paths: list[Path], out: Path) -> list[Path]:
    """Write a student copy of each notebook into ``out``; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        target = out / path.name
        nbformat.write(student_copy(nb), target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "student",
                        help="where to write the copies (default: student/)")
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to copy (default: every scenario notebook)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    written = write_student_copies(paths, args.out)
    where = args.out.resolve()
    shown = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
    print(f"{len(written)} student notebooks in {shown}/ (solutions and outputs removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
