"""Shared helpers for the book's notebooks: list them, refresh stored outputs, check what is stored.

Hand-written because no standard tool does this: nbclient executes a notebook but does not record
what code produced the outputs, and nbval compares outputs but not whether they are trustworthy.

    python scripts/nbtools.py [--reverse]        # the notebooks in table-of-contents order (the
                                                 # Makefile runs nbval in reverse order with it)
    python scripts/nbtools.py --check            # `make book` refuses outputs that cannot be trusted
    python scripts/nbtools.py --refresh [NB ...] # `make refresh`: re-execute, store, check

Every notebook is stored executed. ``refresh`` runs it top to bottom in a fresh kernel and
records a digest of its code in the notebook's metadata; ``stored_problems`` finds notebooks
whose stored state cannot be trusted: code edited since the last refresh, cells never run,
errors in cells not tagged to raise, tagged cells that did not raise, a quiz whose stored output is
not its quiz file's questions, and printed numbers that are floating-point round-off (see ``round_off_numbers``).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
import tomllib
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


def project_urls() -> dict[str, str]:
    """The ``[project.urls]`` table of pyproject.toml: the one place the addresses are written."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["urls"]


def published_url() -> str:
    """The site's address, ending in a slash."""
    url = project_urls()["Documentation"]
    return url if url.endswith("/") else url + "/"


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


def rewrite(paths: list[Path], edit, check: bool) -> list[Path]:
    """Apply ``edit(nb, path)`` (True when it changed the notebook) to each notebook; write the
    changed ones unless ``check``. The changed notebooks' paths."""
    changed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if edit(nb, path):
            changed.append(path)
            if not check:
                nbformat.write(nb, path)
    return changed


def check_stored() -> int:
    """Say what cannot be trusted in every notebook's stored outputs; 1 if anything."""
    bad = 0
    for path in notebook_paths():
        for problem in stored_problems(path):
            print(f"{path.relative_to(ROOT)}: {problem}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


def refresh_and_check(paths: list[Path]) -> int:
    """Refresh each notebook, say how long it took and what is wrong with it; 1 if anything."""
    failed = 0
    for path in paths:
        start = time.perf_counter()
        refresh(path)
        problems = stored_problems(path)
        took = time.perf_counter() - start
        print(f"{path.name}: {took:.1f} s" + ("" if not problems else "  PROBLEMS:"))
        for problem in problems:
            print("   ", problem)
        failed += bool(problems)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--reverse", action="store_true", help="the notebooks in reverse order")
    what.add_argument("--check", action="store_true",
                      help="say what cannot be trusted in the stored outputs; exit 1 if anything")
    what.add_argument("--refresh", nargs="*", type=Path, metavar="NOTEBOOK",
                      help="re-execute these notebooks (default: all) and store their outputs")
    args = parser.parse_args(argv)
    if args.check:
        return check_stored()
    if args.refresh is not None:
        return refresh_and_check([p.resolve() for p in args.refresh] or notebook_paths())
    print("\n".join(p.relative_to(ROOT).as_posix() for p in notebook_paths(reverse=args.reverse)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
