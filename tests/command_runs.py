"""The command run on the programs of tests/scripts, and a program run with the edit
it printed applied: what the tests of unseen programs share."""

from __future__ import annotations

import contextlib
import io
import json
import linecache
import os
import re
import runpy
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from autograd_lens.source.edits import Edit, apply, by_file
import forked_command
from statements import unsupported

SCRIPTS = Path(__file__).parent / "scripts"


def marked(name: str, mark: str) -> int:
    """The line of script ``name`` whose comment holds ``mark`` (0: none)."""
    for number, line in enumerate((SCRIPTS / name).read_text().splitlines(), 1):
        if "#" in line and re.search(rf"\b{mark}\b", line.split("#", 1)[1]):
            return number
    return 0


def _commanded(name: str, folder: Path) -> dict:
    folder.mkdir()
    (folder / name).write_text((SCRIPTS / name).read_text())
    code, _, text = forked_command.command(["--report", "r.json", name], folder)
    return {"code": code, "text": text, "folder": folder,
            "report": json.loads((folder / "r.json").read_text())}


def commanded(names: list[str], base: Path) -> dict:
    """The command as a process (forked from a server that imported torch once, see
    :mod:`forked_command`), as a user starts it (its edits run, not only said), on each script
    of ``names`` in a folder of its own below ``base``, two at a time (one at a time under
    pytest-xdist, which already runs a test file on each core: on a 2-core machine,
    tests/command/inplace took 228 s so, 261 s two at a time, medians of two runs in turns): its
    exit code, what it printed (``text``), the folder and its report."""
    with ThreadPoolExecutor(max_workers=1 if os.environ.get("PYTEST_XDIST_WORKER") else 2) as pool:
        futures = {name: pool.submit(_commanded, name, base / name[:-3]) for name in names}
        return {name: future.result() for name, future in futures.items()}


def recorded_runs(names: list[str], base: Path) -> dict:
    """:func:`commanded` on failing scripts, each checked: it failed (exit code 1), its replay
    recorded the failure, and every statement it makes is one the recording supports."""
    found = commanded(names, base)
    for name, run in found.items():
        assert run["code"] == 1 and run["report"]["recorded"], run["text"][-800:]
        wrong = unsupported(run["text"], run["report"])
        assert not wrong, f"{name}: statements the recording does not support: {wrong}"
    return found


def command_reports(names: list[str], folder: Path) -> dict:
    """What the command printed, its exit code and its report, for each script of ``names``;
    every statement it makes about what happened is held to its replay's recording (see
    :mod:`statements`), in every test that runs the command through here."""
    found = {}
    for name in names:
        report = folder / f"{name}.json"
        code, _, text = forked_command.command(
            ["--report", str(report), "--no-verify", str(SCRIPTS / name)], Path.cwd())
        found[name] = {"code": code, "text": text, "report": json.loads(report.read_text())}
        wrong = unsupported(found[name]["text"], found[name]["report"])
        assert not wrong, f"{name}: statements the recording does not support: {wrong}"
    return found


def run_edited(name: str, edits: list[dict], folder: Path) -> dict:
    """The script ``name`` with ``edits`` (as a report lists them) applied, run: its globals."""
    assert edits, f"no edit for {name}"
    found = [Edit(e["file"], e["line"], e["old"], tuple(e["new"])) for e in edits]
    (_, group), = by_file(found).items()
    fixed = folder / name
    fixed.write_text("".join(apply(group, linecache.getlines(str(SCRIPTS / name)))))
    with contextlib.redirect_stdout(io.StringIO()):
        return runpy.run_path(str(fixed), run_name="__main__")


def value(space: dict, path: str) -> torch.Tensor:
    """A tensor of a run's globals by its path (``net.0.weight``: an index into a Sequential)."""
    head, *rest = path.split(".")
    found = space[head]
    for attr in rest:
        found = found[int(attr)] if attr.isdigit() else getattr(found, attr)
    return found


def trains_as(name: str, report: dict, reference: dict, folder: Path) -> None:
    """The script ``name`` run with the edit ``report`` printed ends with the tensors that
    ``reference`` (path: tensor, from a program written by hand) holds, to round-off."""
    space = run_edited(name, report["edits"], folder)
    for path, expected in reference.items():
        torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                   rtol=1e-5, atol=1e-6)


def entered(carrier: dict) -> tuple[str, int]:
    """A report's carrier as (name, line) where it enters the failing step: its ``enters`` when
    the report gives, for the freed-graph error, the line where it got the graph instead."""
    where = carrier.get("enters") or carrier
    return where.get("name", carrier["name"]), where["line"]


def wait_until(condition, seconds: float) -> bool:
    """Whether ``condition()`` came true within ``seconds`` (asked every 50 ms)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def processes_below(pid: int, deep: bool = True) -> list[int]:
    """The processes below ``pid``, read from /proc: all of them, or its children alone."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            if deep:
                stack.append(child)
    return found
