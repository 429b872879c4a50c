"""`make bench`: the figures of the book's status page, against its speed targets.

Writes ``bench/report.json`` and regenerates ``chapters/status.md`` from it. Every build, test and
notebook time is the median of ``BENCH_REPEATS`` runs (default 3): a 2-core machine is noisy. The
library's ratios divide two medians of ``LIBRARY_REPEATS`` (9) runs each, and the command's costs
are medians over ``WATCH_PAIRS`` (1,000) pairs of blocks of 20 calls, plain and watched in turns
(``scripts/bench_command.py``; the training ratio's: a quarter as many pairs of 20 steps).
Measured:

* the library's ratios, each side by side with what it is compared to, in one process;
* the command's time beyond the program's own on the 3,800-node LSTM (``scripts/bench_command.py``:
  the median of ``BENCH_REPEATS`` differences, each of a plain run and the command's run side by side);
* every notebook alone in a fresh kernel (nbclient), and each cell's time; the floor, a fresh
  kernel that runs only the setup cell every notebook starts with (what every notebook imports),
  and each notebook's time as a multiple of it;
* ``make book`` from nothing (after set-up) and with nothing changed; ``make test`` and each of its
  stages alone (``make test`` runs them in two lanes at once, so it takes less than their sum),
  and the slowest test files of the unit tests and nbval (pytest's ``--durations``, summed by file);
* how the built site reads, in Chromium (``scripts/drawing_sizes.py``): the drawings' smallest
  text on a laptop and on a phone, opened on a phone, and where the fix box sits;
* the landing page's first paint against a bare page's on the same server, medians of loads taken
  in turns (``scripts/first_paint.py``, which says why this is a benchmark and not a test).

These are benchmarks, not timed tests: a slow machine makes a target show "no" here, never a test fail.
``python scripts/bench.py --reading`` measures only how the built site reads (run ``make book``
first) and rewrites the page from ``bench/report.json`` with those figures: no timing is taken
again, on a machine busy with other work where timings would say little. ``python scripts/bench.py
--command`` measures only the command's figures (its first run's cost per call and on training
steps, and its time on the LSTM) and rewrites the page with them; the page dates each target it
shows, so a figure measured alone says when.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata as md
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient
from torch import nn

import autograd_lens as al
from bench_command import LIMIT as LSTM_LIMIT
from bench_command import command_costs, lstm_command_extra, seconds
from drawing_sizes import site_figures, summarize
from first_paint import LIMIT as FIRST_PAINT_LIMIT
from first_paint import first_paint
from nbtools import ROOT, notebook_paths
from setup_cell import setup_source

REPEATS = int(os.environ.get("BENCH_REPEATS", 3))
LIBRARY_REPEATS = 9   # runs of each side of a library ratio (its own, not BENCH_REPEATS)
WATCH_PAIRS = 1000    # pairs of blocks of the command's costs (bench_command.command_costs)
WATCH_CALLS = 20_000  # pairs of single calls of the same timed call by call
SLOWEST = 15          # test files the status page lists, slowest first
# key: (what the status page calls it, the limit it must stay below)
TARGETS = {
    "make_test_s": ("`make test`, seconds", 180.0),
    "make_book_no_change_s": ("`make book` with nothing changed, seconds", 10.0),
    "notebook_alone_max_s": ("slowest notebook alone in a fresh kernel, seconds", 12.0),
    "cell_max_s": ("slowest cell, seconds", 3.0),
    "notebook_vs_floor_max": ("slowest notebook alone / the floor", 2.0),
    "saved_tensors_vs_backward": ("`saved_tensors` / backward, 10,000-node graph", 1.0),
    "diagnose_vs_backward": ("`diagnose` / backward, 10,000-node graph", 1.0),
    # On a stale graph diagnose also decides the pattern, asking along the way to the old graph
    # whether each node reaches it: 2.9 when each node is decided once, 196 when each asked anew.
    "diagnose_stale_vs_backward": ("`diagnose` on the same graph half freed / backward", 5.0),
    "diagnose_vs_training_step": ("`diagnose` / one transformer-encoder training step", 0.05),
    "first_paint_vs_bare": ("landing page's first paint / a bare page's, medians, the slower of laptop and phone", FIRST_PAINT_LIMIT),
    "watch_added_us_per_call": ("the command's first run: microseconds added per backward call", 1.0),
    "watch_adam_mlp_ratio": ("the command's first run: MLP with Adam, watched / plain", 1.01),
    "lstm_command_extra_s": ("the command on the 3,800-node LSTM: seconds beyond the program's own "
                             "(diagnosis, replay, runs of the edits)", LSTM_LIMIT),
}


def lstm_figures(repeats: int) -> dict[str, float]:
    """The command's time beyond the program's own on the character-level LSTM of
    ``scripts/bench_command.py``: medians of ``repeats`` runs, each a plain run and the command's
    run side by side."""
    found = lstm_command_extra(repeats)
    return {"lstm_plain_s": found["plain_s"], "lstm_command_s": found["command_s"],
            "lstm_command_extra_s": found["command_extra_s"]}


def tiny_graph(half_freed: bool = False) -> torch.Tensor:
    """About 10,000 nodes on 4-element tensors: a chain with side branches. ``half_freed``: the
    first half's graph freed by a backward before the second half is built on it (a state carried
    into the next step)."""
    torch.manual_seed(0)
    w, v = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    y = w
    for i in range(4998):
        if half_freed and i == 2499:
            y.sum().backward()
        y = (y * v).sin() if i % 2 else (y + w).tanh()
    return y.sum()


def library_ratios(repeats: int = LIBRARY_REPEATS) -> dict:
    """Each look runs on a fresh graph (its first look, the expensive one), then backward on it."""
    times = {"saved_tensors": [], "diagnose": [], "backward": [], "diagnose_stale": []}
    for _ in range(repeats):
        for name, look in (("saved_tensors", al.saved_tensors), ("diagnose", al.diagnose)):
            root = tiny_graph()
            times[name].append(seconds(lambda: look(root)))
            times["backward"].append(seconds(root.backward))
        stale = tiny_graph(half_freed=True)
        times["diagnose_stale"].append(seconds(lambda: al.diagnose(stale)))
    saved, diag, back, diag_stale = (statistics.median(times[k]) for k in
                                     ("saved_tensors", "diagnose", "backward", "diagnose_stale"))

    torch.manual_seed(0)   # a 2-layer Transformer encoder, d_model 128, batch 32 x 64 tokens, Adam
    layer = nn.TransformerEncoderLayer(128, nhead=4, dim_feedforward=512, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, num_layers=2), nn.Linear(128, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64, 128), torch.randn(32, 64, 1)

    def step(look: bool) -> float:
        """One training step; returns the seconds diagnose took, right after the forward."""
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        took = seconds(lambda: al.diagnose(loss)) if look else 0.0
        loss.backward()
        opt.step()
        return took

    step(False)
    steps = statistics.median(seconds(lambda: step(False)) for _ in range(repeats))
    diagnose = statistics.median(step(True) for _ in range(repeats))
    return {"saved_tensors_vs_backward": round(saved / back, 6),
            "diagnose_vs_backward": round(diag / back, 6),
            "diagnose_stale_vs_backward": round(diag_stale / back, 6),
            "diagnose_vs_training_step": round(diagnose / steps, 6),
            "graph_nodes": len(al.walk(tiny_graph()))}


def run_alone(nb: nbformat.NotebookNode, folder: Path) -> tuple[float, list[float]]:
    """Run a notebook in a fresh kernel: the wall time and each code cell's time."""
    client = NotebookClient(nb, timeout=120, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(folder)}})
    took = seconds(client.execute)
    cells = []
    for cell in nb.cells:
        timing = cell.metadata.get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in timing:
            begin, end = (dt.datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                          for k in ("iopub.execute_input", "shell.execute_reply"))
            cells.append((end - begin).total_seconds())
    return took, cells


def notebook_times() -> tuple[float, dict]:
    """Every notebook alone, and the floor: measured before and after the notebooks (a shared
    machine's load drifts), its median over both."""
    floor = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup_source())])
    floor_runs = [run_alone(floor, ROOT)[0] for _ in range(REPEATS)]
    notebooks = {}
    for path in notebook_paths():
        runs = [run_alone(nbformat.read(path, as_version=4), path.parent) for _ in range(REPEATS)]
        cells = [statistics.median(c) for c in zip(*(r[1] for r in runs))]
        slowest = max(range(len(cells)), key=cells.__getitem__)
        name = path.relative_to(ROOT).as_posix()
        notebooks[name] = {"alone_s": round(statistics.median(r[0] for r in runs), 2),
                           "slowest_cell_s": round(cells[slowest], 2), "slowest_cell_index": slowest,
                           "code_cells": len(cells)}
        print(f"  {path.name:40s} {notebooks[name]['alone_s']:6.2f} s", flush=True)
    floor_runs += [run_alone(floor, ROOT)[0] for _ in range(REPEATS)]
    floor_s = statistics.median(floor_runs)
    for n in notebooks.values():
        n["vs_floor"] = round(n["alone_s"] / floor_s, 2)
    return round(floor_s, 2), notebooks


_DURATION = re.compile(r"^(\d+\.\d+)s (?:setup|call|teardown)\s+(\S+?)(?:::|$)", re.MULTILINE)


def slowest_files(pytest_output: str, most: int = SLOWEST) -> list[list]:
    """The test files that took longest, as pytest's ``--durations=0`` gave each test's setup, call
    and teardown (a module's shared command runs are in its first test's setup): [file, seconds]."""
    files: dict[str, float] = {}
    for took, path in _DURATION.findall(pytest_output):
        files[path] = files.get(path, 0.0) + float(took)
    return [[path, round(took, 1)] for path, took in sorted(files.items(), key=lambda f: -f[1])[:most]]


def make_times() -> dict:
    outputs: dict[str, str] = {}  # what each target printed, its tests' durations among it
    env = dict(os.environ, PYTEST_ADDOPTS="--durations=0 --durations-min=0.5")

    def run(target: str) -> None:
        outputs[target] = subprocess.run(["make", target], cwd=ROOT, check=True, capture_output=True,
                                         text=True, env=env).stdout

    def make(target: str, clean: bool = False) -> float:
        times = []
        for _ in range(REPEATS):
            if clean:
                shutil.rmtree(ROOT / "_build", ignore_errors=True)
            times.append(seconds(lambda: run(target)))
        return round(statistics.median(times), 2)

    first = make("book", clean=True)
    parts = {name: make(target) for name, target in
             [("unit", "test-unit"), ("nbval", "test-notebooks"), ("site", "test-site"), ("lab", "test-lab")]}
    return {"make_book_first_s": first, "make_book_no_change_s": make("book"),
            "make_test_parts_s": {**parts, "build": first}, "make_test_s": make("test", clean=True),
            "slowest_test_files": slowest_files(outputs["test-unit"] + outputs["test-notebooks"])}


def versions() -> dict:
    names = ["torch", "torchviz", "graphviz", "matplotlib", "jupyter-book", "sphinx", "myst-nb",
             "nbval", "pytest", "playwright"]
    found = {name: md.version(name) for name in names}
    dot = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    return {**found, "python": platform.python_version(),
            "graphviz dot": dot.replace("dot - graphviz version ", "")}


READING = {  # key of drawing_sizes.summarize: what the status page calls it
    "laptop_in_the_column": "laptop (1366x768), in the page's column (not behind a toggle)",
    "laptop_every_drawing": "laptop, every drawing (a whole graph behind a toggle too)",
    "phone_in_the_column": "phone (390x844), in the page's column",
    "phone_opened": "phone, each drawing opened (its link; a replay's Full size button)",
}


def reading_lines(reading: dict | None) -> list[str]:
    """The status page's section on how the built site's drawings read."""
    if not reading:
        return ["", "## How the pages read", "", "Not measured: no Chromium was found."]
    fix = reading["fix_box"]
    lines = ["", "## How the pages read", "",
             f"Measured on {reading.get('date', 'the day above')}, on the built site in Chromium: each graph "
             "drawing's smallest text as rendered, in CSS px",
             "(the backward replays in every frame). The browser test fails under 9 px in the column on a",
             "laptop and for a drawing opened on a phone.", "",
             "| where | drawings | smallest | median | under 8 px | under 9 px |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {name} | {r['count']} | {r['min_px']} | {r['median_px']} | {r['under_8']} | {r['under_9']} |"
              for key, name in READING.items() for r in [reading[key]]]
    lines += ["", f"The fix box on each of the {fix['pages']} scenario pages (laptop) starts {fix['top_min_px']} "
              f"to {fix['top_max_px']} px from the top and ends by {fix['bottom_max_px']} px, "
              + ("inside" if fix["bottom_max_px"] <= 768 else "not all inside") + " the first screen of 768 px."]
    return lines


def _shown(value: float, limit: float) -> str:
    """A measured value in the targets' table: three significant digits, four where the limit
    has a fraction (a ratio of 1.004 against 1.01 is not shown as 1)."""
    return f"{value:.4g}" if limit != int(limit) else f"{value:.3g}"


def status_page(report: dict) -> str:
    make = report["make"]
    lines = ["# Status", "",
             "What the book was last checked with, and how long things take, as measured by `make bench`",
             f"on {report['machine']['cores']} cores ({report['machine']['system']}), on "
             f"{report['date']}" + (", some targets again since (each target says its day)"
                                    if any(t.get("date", report["date"]) != report["date"]
                                           for t in report["targets"].values()) else "")
             + f". Every build, test and notebook time is the median of {report['repeats']} runs;",
             f"each library ratio divides two medians of {report.get('library_repeats', LIBRARY_REPEATS)} runs"
             + (f", and the command's costs are medians over {report.get('watch_pairs', WATCH_PAIRS)} pairs of"
                f" blocks of 20 backward calls, plain and watched in turns (the training ratio's: a quarter"
                f" as many pairs of 20 steps), timed inside the watch, which the command enters once a"
                f" program; measured the same way, a wrapper that only passes each call on gives"
                f" {report['library'].get('passthrough_added_us_per_call', float('nan')):.2g} us a call"
                f" (where nothing is added: the method's noise)"
                if "watch_added_us_per_call" in report["library"] else "")
             + (f"; timed call by call instead (each tiny call alone, one plain and one watched in"
                f" turns, over {report.get('watch_calls', WATCH_CALLS):,} pairs: steadier, but blind to"
                f" what the watch costs the code between calls), the watch adds"
                f" {report['library']['watch_alone_us_per_call']:.2g} us a call and that wrapper"
                f" {report['library'].get('passthrough_alone_us_per_call', float('nan')):.2g} us"
                if "watch_alone_us_per_call" in report["library"] else "")
             + (f"; the command's time on the LSTM beyond the program's own is the median of "
                f"{report.get('command_repeats', report['repeats'])} "
                "differences, each of a plain run and the command's run side by side"
                if "lstm_command_extra_s" in report["library"] else "") + ".", "",
             "## Speed targets", "", "| target | measured | limit | met | on |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {TARGETS[k][0]} | {_shown(t['value'], t['limit'])} | {t['limit']:g} | {'yes' if t['met'] else 'no'} "
              f"| {t.get('date', report['date'])} |" for k, t in report["targets"].items()]
    lines += ["", "## Building and testing", "",
              f"- `make book` from nothing (after set-up): {make['make_book_first_s']} s; "
              f"with nothing changed: {make['make_book_no_change_s']} s."]
    lines += [f"- `make test`: {make['make_test_s']} s. It runs two lanes at once, the unit tests then "
              "nbval, and the book build then the browser test; each stage alone:"]
    lines += [f"  - {part}: {took} s" for part, took in make["make_test_parts_s"].items()]
    if make.get("slowest_test_files"):
        lines += ["", f"The {len(make['slowest_test_files'])} slowest test files of the unit tests and "
                  "nbval (setup, call and teardown of each test, summed; the last run of each):", ""]
        lines += [f"- `{path}`: {took} s" for path, took in make["slowest_test_files"]]
    lines += ["", "The floor (a fresh kernel that runs only the setup cell every notebook starts with, "
              f"so imports what every notebook imports): {report['notebooks_floor_s']} s.", "",
              "## Each notebook alone in a fresh kernel", "",
              "| notebook | run alone (s) | / the floor | slowest cell (s) | code cells |",
              "| --- | --- | --- | --- | --- |"]
    lines += [f"| {{doc}}`{Path(name).stem} <../{Path(name).with_suffix('').as_posix()}>` | "
              f"{n['alone_s']} | {n['vs_floor']} | {n['slowest_cell_s']} | {n['code_cells']} |"
              for name, n in report["notebooks"].items()]
    lines += reading_lines(report.get("reading"))
    lines += ["", "## Versions", "", "| package | version |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in report["versions"].items()]
    lines += ["", "Regenerate this page with `make bench` (it also writes `bench/report.json`).", ""]
    return "\n".join(lines)


def reading() -> dict | None:
    """How the built site reads (drawing_sizes.py), dated; None without a Chromium."""
    figures = site_figures(ROOT / "_build" / "html")
    return {**summarize(figures), "date": dt.date.today().isoformat()} if figures else None


def reading_only() -> int:
    """Re-measure how the site reads; the rest of the page from the stored report, unchanged."""
    report = json.loads((ROOT / "bench" / "report.json").read_text())
    report["reading"] = reading()
    (ROOT / "bench" / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (ROOT / "chapters" / "status.md").write_text(status_page(report))
    print("Wrote the reading figures into bench/report.json and chapters/status.md")
    return 0 if report["reading"] else 1


COMMAND = ("watch_added_us_per_call", "watch_adam_mlp_ratio", "lstm_command_extra_s")  # targets


def target(key: str, value: float, date: str) -> dict:
    """A target of :data:`TARGETS` as the report keeps it: its figure, limit, whether it is met,
    and the day it was measured."""
    limit = TARGETS[key][1]
    return {"value": value, "limit": limit, "met": value <= limit, "date": date}


def print_targets(targets: dict) -> None:
    for key, t in targets.items():
        print(f"{key:28s} {t['value']:>10.4g} {t['limit']:>9g}   {'yes' if t['met'] else 'NO'}")


def with_command_figures(report: dict, figures: dict, date: str) -> dict:
    """``report`` with the command's ``figures`` (:func:`command_figures`'s) in its library
    figures, and its targets measured again on ``date``; the rest as it was, with its own date."""
    targets = {k: {**t, "date": t.get("date", report["date"])} for k, t in report["targets"].items()}
    targets.update({k: target(k, figures[k], date) for k in COMMAND})
    return {**report, "library": {**report["library"], **figures}, "targets": targets,
            "watch_pairs": WATCH_PAIRS, "watch_calls": WATCH_CALLS, "command_repeats": REPEATS}


def command_figures() -> dict:
    """The command's figures: its first run's costs, then its time on the LSTM."""
    return {**command_costs(pairs=WATCH_PAIRS, calls=WATCH_CALLS), **lstm_figures(REPEATS)}


def command_only() -> int:
    """Re-measure the command's figures; the rest of the page from the stored report, unchanged."""
    report = json.loads((ROOT / "bench" / "report.json").read_text())
    report = with_command_figures(report, command_figures(), dt.date.today().isoformat())
    (ROOT / "bench" / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (ROOT / "chapters" / "status.md").write_text(status_page(report))
    print_targets({key: report["targets"][key] for key in COMMAND})
    print("Wrote the command's figures into bench/report.json and chapters/status.md")
    return 0 if all(report["targets"][k]["met"] for k in COMMAND) else 1


def main() -> int:
    if sys.argv[1:] == ["--reading"]:
        return reading_only()
    if sys.argv[1:] == ["--command"]:
        return command_only()
    print(f"Benchmarking with {REPEATS} repeats; this takes a while.", flush=True)
    library = library_ratios()
    library.update(command_figures())  # the command's first run, side by side in this run
    floor, notebooks = notebook_times()
    report = {"date": dt.date.today().isoformat(), "repeats": REPEATS,
              "library_repeats": LIBRARY_REPEATS, "watch_pairs": WATCH_PAIRS,
              "watch_calls": WATCH_CALLS,
              "machine": {"cores": os.cpu_count(), "system": f"{platform.system()} {platform.machine()}"},
              "versions": versions(), "notebooks_floor_s": floor, "notebooks": notebooks,
              "make": make_times(), "library": library}
    report["reading"] = reading()   # the site make_times() just built
    report["first_paint"] = first_paint(ROOT / "_build" / "html")
    figures = {**library, **report["make"],
               "first_paint_vs_bare": max(f["ratio"] for f in (report["first_paint"] or {"-": {"ratio": float("nan")}}).values()),
               "notebook_alone_max_s": max(n["alone_s"] for n in notebooks.values()),
               "notebook_vs_floor_max": max(n["vs_floor"] for n in notebooks.values()),
               "cell_max_s": max(n["slowest_cell_s"] for n in notebooks.values())}
    report["targets"] = {k: target(k, figures[k], report["date"]) for k in TARGETS}
    (ROOT / "bench").mkdir(exist_ok=True)
    (ROOT / "bench" / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (ROOT / "chapters" / "status.md").write_text(status_page(report))
    print_targets(report["targets"])
    print("Wrote bench/report.json and chapters/status.md")
    return 0 if all(t["met"] for t in report["targets"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
