"""`make bench`: where the time goes, measured on this machine, against the book's speed targets.

Every figure is the median of several runs (``--repeats``, default 3), because a 2-core machine is
noisy. Prints a table, writes ``bench/report.json`` (machine-readable) and regenerates
``chapters/status.md`` (the book's status page) from it.

Measured:
  * the floor: a fresh kernel that imports torch, torchviz and matplotlib and draws one graph;
  * every notebook alone in a fresh kernel (``jupyter nbconvert --execute``), and every cell's time;
  * ``make book`` from nothing (after set-up) and with nothing changed;
  * ``make test`` and its parts: unit tests, strict nbval, the build, the browser test;
  * the library's ratios (graph walk and diagnose against backward), from scripts/bench_lens.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
LABELS = {
    "make_test_s": "`make test`, seconds",
    "make_book_no_change_s": "`make book` with nothing changed, seconds",
    "notebook_alone_max_s": "slowest notebook alone in a fresh kernel, seconds",
    "cell_max_s": "slowest cell, seconds",
    "saved_tensors_vs_backward": "`saved_tensors` / backward, 10,000-node graph",
    "diagnose_vs_backward": "`diagnose` / backward, 10,000-node graph",
    "diagnose_vs_training_step": "`diagnose` / one transformer-encoder training step",
}
TARGETS = {
    "make_test_s": 240.0,
    "make_book_no_change_s": 10.0,
    "notebook_alone_max_s": 12.0,
    "cell_max_s": 3.0,
    "saved_tensors_vs_backward": 1.0,
    "diagnose_vs_backward": 1.0,
    "diagnose_vs_training_step": 0.05,
}
FLOOR_CODE = """\
import torch, torchviz, matplotlib
import matplotlib.pyplot as plt
x = torch.ones(3, requires_grad=True)
torchviz.make_dot((x * x).sum())
"""


def timed(cmd: list[str], **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   **kwargs)
    return time.perf_counter() - start


def median_of(repeats: int, run) -> float:
    return statistics.median(run() for _ in range(repeats))


def toc_notebooks() -> list[Path]:
    out = subprocess.run(["scripts/toc_order.sh"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [ROOT / p for p in out]


def execute_alone(path: Path, workdir: Path) -> tuple[float, list[float]]:
    """Run one notebook in a fresh kernel; return the wall time and each code cell's time."""
    out = workdir / path.name
    start = time.perf_counter()
    subprocess.run([PY, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=120", "--output", str(out), str(path)],
                   cwd=path.parent, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    took = time.perf_counter() - start
    cells = []
    for cell in nbformat.read(out, as_version=4).cells:
        timing = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in timing:
            begin = dt.datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
            end = dt.datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
            cells.append((end - begin).total_seconds())
    return took, cells


def bench_notebooks(repeats: int) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        floor_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_CODE)])
        floor_nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                           "language": "python"}
        floor_path = work / "floor.ipynb"
        nbformat.write(floor_nb, floor_path)
        (work / "out").mkdir()
        floor = median_of(repeats, lambda: execute_alone(floor_path, work / "out")[0])
        results["floor_s"] = round(floor, 2)
        notebooks = {}
        for path in toc_notebooks():
            runs = [execute_alone(path, work / "out") for _ in range(repeats)]
            cell_medians = [statistics.median(c) for c in zip(*(r[1] for r in runs))]
            slowest = max(range(len(cell_medians)), key=cell_medians.__getitem__) if cell_medians else None
            notebooks[path.relative_to(ROOT).as_posix()] = {
                "alone_s": round(statistics.median(r[0] for r in runs), 2),
                "slowest_cell_s": round(cell_medians[slowest], 2) if slowest is not None else 0.0,
                "slowest_cell_index": slowest,
                "code_cells": len(cell_medians),
            }
            print(f"  {path.name:40s} {notebooks[path.relative_to(ROOT).as_posix()]['alone_s']:6.2f} s",
                  flush=True)
        results["notebooks"] = notebooks
    return results


def bench_make(repeats: int, quick: bool) -> dict:
    make = shutil.which("make")
    results = {}

    def first_book() -> float:
        shutil.rmtree(ROOT / "_build", ignore_errors=True)
        return timed([make, "book"])

    results["make_book_first_s"] = round(median_of(repeats, first_book), 2)
    results["make_book_no_change_s"] = round(median_of(repeats, lambda: timed([make, "book"])), 2)
    if quick:
        return results
    parts = {}
    for name, target in [("unit", "test-unit"), ("nbval", "test-notebooks"), ("site", "test-site")]:
        if name == "site" and "test-site:" not in (ROOT / "Makefile").read_text():
            continue
        parts[name] = round(median_of(repeats, lambda t=target: timed([make, t])), 2)
    parts["build"] = results["make_book_first_s"]
    results["make_test_parts_s"] = parts

    def full_test() -> float:
        shutil.rmtree(ROOT / "_build", ignore_errors=True)
        return timed([make, "test"])

    results["make_test_s"] = round(median_of(repeats, full_test), 2)
    return results


def bench_library(repeats: int) -> dict:
    script = ROOT / "scripts" / "bench_lens.py"
    if not script.exists():
        return {}
    out = subprocess.run([PY, str(script)], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    line = next(l for l in reversed(out.splitlines()) if l.startswith("{"))
    raw = json.loads(line)
    return {"saved_tensors_vs_backward": raw["saved_tensors_over_backward"],
            "diagnose_vs_backward": raw["diagnose_over_backward"],
            "diagnose_vs_training_step": raw["diagnose_over_train_step"],
            "graph_nodes": raw["nodes"], "raw": raw}


def versions() -> dict:
    import importlib.metadata as md
    names = ["torch", "torchviz", "graphviz", "matplotlib", "jupyter-book", "sphinx", "myst-nb",
             "nbval", "pytest", "playwright"]
    found = {}
    for name in names:
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    dot = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    found["python"] = platform.python_version()
    found["graphviz dot"] = dot.replace("dot - graphviz version ", "")
    return found


def check_targets(report: dict) -> dict:
    figures = {
        "make_test_s": report["make"].get("make_test_s"),
        "make_book_no_change_s": report["make"].get("make_book_no_change_s"),
        "notebook_alone_max_s": max((n["alone_s"] for n in report["notebooks"].values()), default=None),
        "cell_max_s": max((n["slowest_cell_s"] for n in report["notebooks"].values()), default=None),
    }
    for key in ("saved_tensors_vs_backward", "diagnose_vs_backward", "diagnose_vs_training_step"):
        figures[key] = report["library"].get(key)
    return {k: {"value": v, "limit": TARGETS[k], "met": (v is not None and v < TARGETS[k])}
            for k, v in figures.items()}


def write_status(report: dict) -> None:
    lines = [
        "# Status",
        "",
        "What the book was last checked with, and how long things take, as measured by `make bench`",
        f"on {report['machine']['cores']} cores ({report['machine']['system']}), on "
        f"{report['date']}. Every time is the median of {report['repeats']} runs.",
        "",
        "## Speed targets",
        "",
        "| target | measured | limit | met |",
        "| --- | --- | --- | --- |",
    ]
    for key, t in report["targets"].items():
        value = "not measured" if t["value"] is None else f"{t['value']:.3g}"
        lines.append(f"| {LABELS[key]} | {value} | {t['limit']:g} | "
                     f"{'yes' if t['met'] else 'no'} |")
    make = report["make"]
    lines += ["", "## Building and testing", "",
              f"- `make book` from nothing (after set-up): {make.get('make_book_first_s')} s; "
              f"with nothing changed: {make.get('make_book_no_change_s')} s."]
    for part, took in make.get("make_test_parts_s", {}).items():
        lines.append(f"- `make test`, part {part}: {took} s.")
    lines += ["", f"The floor (a fresh kernel that imports torch, torchviz and matplotlib and draws one "
              f"graph): {report['notebooks_floor_s']} s.", "",
              "## Each notebook alone in a fresh kernel", "",
              "| notebook | run alone (s) | slowest cell (s) | code cells |", "| --- | --- | --- | --- |"]
    for name, n in report["notebooks"].items():
        lines.append(f"| {{doc}}`{Path(name).stem} <../{Path(name).with_suffix('').as_posix()}>` | "
                     f"{n['alone_s']} | {n['slowest_cell_s']} | {n['code_cells']} |")
    lines += ["", "## Versions", "", "| package | version |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in report["versions"].items()]
    lines += ["", "Regenerate this page with `make bench` (it also writes `bench/report.json`).", ""]
    (ROOT / "chapters" / "status.md").write_text("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=int(os.environ.get("BENCH_REPEATS", 3)))
    parser.add_argument("--quick", action="store_true", help="skip the make test timings")
    parser.add_argument("--status-only", action="store_true",
                        help="only rewrite chapters/status.md from bench/report.json")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.status_only:
        write_status(json.loads((ROOT / "bench" / "report.json").read_text()))
        return 0
    print(f"Benchmarking with {args.repeats} repeats; this takes a while.", flush=True)
    print("Library ratios ...", flush=True)
    library = bench_library(args.repeats)
    print("Notebooks alone in fresh kernels ...", flush=True)
    nbs = bench_notebooks(args.repeats)
    print("make targets ...", flush=True)
    make = bench_make(args.repeats, args.quick)
    report = {
        "date": dt.date.today().isoformat(),
        "repeats": args.repeats,
        "machine": {"cores": os.cpu_count(), "system": f"{platform.system()} {platform.machine()}"},
        "versions": versions(),
        "notebooks_floor_s": nbs["floor_s"],
        "notebooks": nbs["notebooks"],
        "make": make,
        "library": library,
    }
    report["targets"] = check_targets(report)
    (ROOT / "bench").mkdir(exist_ok=True)
    (ROOT / "bench" / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    write_status(report)
    print(json.dumps({"make": make, "library": library, "floor_s": nbs["floor_s"]}, indent=2))
    print("\ntarget                        measured     limit   met")
    for key, t in report["targets"].items():
        value = "n/a" if t["value"] is None else f"{t['value']:.4g}"
        print(f"{key:28s} {value:>10s} {t['limit']:>9g}   {'yes' if t['met'] else 'NO'}")
    print("\nWrote bench/report.json and chapters/status.md")
    return 0 if all(t["met"] for t in report["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
