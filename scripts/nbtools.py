"""Shared helpers for the book's notebooks: list them, refresh stored outputs, check what is stored.

Hand-written because no standard tool does this: nbclient executes a notebook but does not record
what code produced the outputs, and nbval compares outputs but not whether they are trustworthy.
``python scripts/nbtools.py [--reverse]`` prints the notebooks in table-of-contents order (the
Makefile runs nbval in reverse order with it).

Every notebook is stored executed. ``refresh`` runs it top to bottom in a fresh kernel and
records a digest of its code in the notebook's metadata; ``stored_problems`` finds notebooks
whose stored state cannot be trusted: code edited since the last refresh, cells never run,
errors in cells not tagged to raise, tagged cells that did not raise, a quiz whose stored output is
not its quiz file's questions, and printed numbers that are floating-point round-off (see ``round_off_numbers``).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = ROOT / "chapters"
META_KEY = "autograd_book"
RAISES = {"raises-exception", "nbval-raises-exception"}
# A cell whose output shows a tiny number on purpose (a tolerance, an epsilon) carries this tag.
SMALL_NUMBER_TAG = "small-number-intended"
# A number in scientific notation, as Python's formatting prints it (3.0e-08, 1e-05, -2.5E-7).
SCIENTIFIC = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d*)?[eE]-\d+")

# The file a quiz cell (tagged ``quiz``) reads its questions from (scripts/quizzes.py).
QUIZ_FILE = re.compile(r'"(quizzes/[A-Za-z0-9_.-]+\.json)"')

# Paths of the machine that ran a notebook, as they appear in tracebacks and warnings.
SITE_PACKAGES = re.compile(r"(?:/[^\s/:'\"]+)+/site-packages/")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:home|root|tmp|work|Users|private|var|opt|usr/local)/[^\s'\"]*")


def scrub_paths(text: str) -> str:
    """Replace the paths of this machine in an output with paths a reader can use anywhere."""
    text = SITE_PACKAGES.sub("site-packages/", text)
    return text.replace(str(ROOT) + "/", "").replace(str(Path.home()) + "/", "~/")


def _output_texts(cell, tracebacks: bool = True) -> list[str]:
    texts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            texts.append(output.text)
        elif output.output_type == "error":
            texts.extend(output.traceback if tracebacks else [])
            texts.append(output.evalue)
        else:
            texts.extend(v for k, v in output.get("data", {}).items()
                         if k.startswith("text/") and isinstance(v, str))
    return [ANSI.sub("", t) for t in texts]


def round_off_numbers(cell) -> list[str]:
    """Numbers below 1e-4 in scientific notation among what nbval compares of a cell's outputs.

    Their digits are floating-point round-off, which differs between processors (the vectorised
    kernels torch picks: AVX-512, AVX2 or scalar), so a stored output that prints one fails on
    another machine. Print what the assert checks instead ("below 0.00001"). Tracebacks are not
    compared by nbval and are left out; a cell tagged ``small-number-intended`` is exempt.
    """
    if SMALL_NUMBER_TAG in cell.metadata.get("tags", []):
        return []
    found = (m.group(0) for t in _output_texts(cell, tracebacks=False) for m in SCIENTIFIC.finditer(t))
    return [n for n in found if 0 < abs(float(n)) < 1e-4]


def toc_files(entry) -> list[str]:
    """The ``file:`` entries of one part of ``_toc.yml``, depth first, in reading order."""
    if isinstance(entry, list):
        return [f for item in entry for f in toc_files(item)]
    if not isinstance(entry, dict):
        return []
    files = [entry["file"]] if "file" in entry else []
    nested = (entry.get(key) for key in ("parts", "chapters", "sections"))
    return files + [f for part in nested for f in toc_files(part)]


def notebook_paths(reverse: bool = False) -> list[Path]:
    """Every notebook of the book, in the order of the table of contents (``_toc.yml``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    paths = [ROOT / f"{doc}.ipynb" for doc in toc_files(toc)]
    paths = [p for p in paths if p.is_file()]
    return paths[::-1] if reverse else paths


def code_digest(nb: nbformat.NotebookNode) -> str:
    """A digest of every code cell's source and tags, in order."""
    h = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type == "code":
            h.update(cell.source.encode())
            h.update(b"\0" + ",".join(sorted(cell.metadata.get("tags", []))).encode() + b"\1")
    return h.hexdigest()


def stored_problems(path: Path) -> list[str]:
    """What is wrong with the stored outputs of one notebook (empty when nothing is)."""
    nb = nbformat.read(path, as_version=4)
    problems = []
    recorded = nb.metadata.get(META_KEY, {}).get("code_sha256")
    if recorded != code_digest(nb):
        problems.append("its code changed since its outputs were stored: run "
                        f"`make refresh NB=notebooks/{path.name}`")
    expected = 1
    for number, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        where = f"cell {number}"
        if cell.execution_count != expected:
            problems.append(f"{where} has execution count {cell.execution_count}, expected "
                            f"{expected}: outputs must come from one top-to-bottom run")
        expected += 1
        tagged = bool(RAISES & set(cell.metadata.get("tags", [])))
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if errors and not tagged:
            problems.append(f"{where} stored an error ({errors[0].ename}) but is not tagged raises-exception")
        if tagged and not errors:
            problems.append(f"{where} is tagged raises-exception but stored no error")
        leaks = sorted({m.group(0) for t in _output_texts(cell) for m in MACHINE_PATH.finditer(t)})
        if leaks:
            problems.append(f"{where} shows a path of the machine that ran it: {leaks[0]}")
        quiz = QUIZ_FILE.search(cell.source) if "quiz" in cell.metadata.get("tags", []) else None
        if quiz and (path.parent / quiz.group(1)).is_file():
            shown = "".join(o.data.get("application/javascript", "") for o in cell.outputs if "data" in o)
            if (path.parent / quiz.group(1)).read_text().rstrip() not in shown:
                problems.append(f"{where} shows a quiz other than {quiz.group(1)}: run "
                                f"`make refresh NB=notebooks/{path.name}`")
        tiny = round_off_numbers(cell)
        if tiny:
            problems.append(f"{where} prints {tiny[0]}, a number whose digits are round-off and differ "
                            "between processors: print what the assert checks (for example "
                            f"'below 0.0001'), or tag the cell {SMALL_NUMBER_TAG} if it is meant")
    return problems


def refresh(path: Path, timeout: int = 120) -> None:
    """Execute ``path`` in a fresh kernel, store its outputs and the digest of its code."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    # A cell's prints stored as one output per stream, however the kernel split them in time
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                output.text = scrub_paths(output.text)
            elif output.output_type == "error":
                output.traceback = [scrub_paths(line) for line in output.traceback]
    nb.metadata[META_KEY] = {"code_sha256": code_digest(nb)}
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)


if __name__ == "__main__":
    order = notebook_paths(reverse="--reverse" in sys.argv[1:])
    print("\n".join(p.relative_to(ROOT).as_posix() for p in order))
