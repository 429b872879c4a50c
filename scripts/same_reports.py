"""The command's reports on many programs, kept, and two sets of them compared byte for byte.

Before and after a change that must not change what the command says (moving modules, say)::

    python scripts/same_reports.py keep before/                 # tests/scripts/*.py
    python scripts/same_reports.py keep before/ more/*.py       # or programs of your own
    ...the change...
    python scripts/same_reports.py keep after/
    python scripts/same_reports.py compare before/ after/       # exit code 1 if any differ

Each program runs alone, in a new temporary folder holding a copy of its own, as
``python -m autograd_lens --report report.json PROGRAM``; kept are the exit code, what the command
printed (its standard error, and the program's output) and the report. What changes from run to
run is left out of the comparison: the temporary folder's path (written ``<folder>``) and process
ids (``<pid>``). The programs that time themselves (``bench_*.py``) are not among the default ones.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kept(program: Path) -> str:
    """What the command gives on ``program``, as one text."""
    with tempfile.TemporaryDirectory(prefix="same-reports-") as folder:
        shutil.copy(program, folder)
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
        try:
            done = subprocess.run([sys.executable, "-m", "autograd_lens", "--report", "report.json",
                                   program.name], cwd=folder, capture_output=True, text=True,
                                  timeout=600, env=env)
            result = f"exit code {done.returncode}"
        except subprocess.TimeoutExpired as stopped:
            done, result = stopped, "stopped after 600 s"
        report = Path(folder, "report.json")
        text = (f"{result}\n--- standard output\n{done.stdout or ''}\n--- standard error\n"
                f"{done.stderr or ''}\n--- report\n"
                f"{report.read_text() if report.exists() else '(none)'}\n")
        return text.replace(os.path.realpath(folder), "<folder>").replace(folder, "<folder>")


def keep(out: Path, programs: list[Path], jobs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for program, text in zip(programs, pool.map(kept, programs)):
            (out / f"{program.stem}.txt").write_text(text)
    print(f"kept the command's reports on {len(programs)} programs in {out}")


_PROCESS_IDS = re.compile(r'(child process |"pid": |"parent": )\d+')


def masked(path: Path) -> list[str]:
    """A kept text, its process ids written ``<pid>``, as lines."""
    return _PROCESS_IDS.sub(r"\1<pid>", path.read_text()).splitlines(True)


def compare(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.glob("*.txt")} | {p.name for p in after.glob("*.txt")})
    differ = []
    for name in names:
        old, new = before / name, after / name
        if not (old.exists() and new.exists()):
            differ.append(name)
            print(f"{name}: only in {before if old.exists() else after}")
        elif masked(old) != masked(new):
            differ.append(name)
            print("".join(difflib.unified_diff(masked(old), masked(new), str(old), str(new))))
    print(f"{len(names) - len(differ)} of {len(names)} reports the same, byte for byte "
          "(process ids aside)")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    keeping = verbs.add_parser("keep", help="run the command on programs and keep what it gives")
    keeping.add_argument("out", type=Path)
    keeping.add_argument("programs", type=Path, nargs="*",
                         help="programs (default: every program in tests/scripts)")
    keeping.add_argument("-j", "--jobs", type=int, default=2)
    comparing = verbs.add_parser("compare", help="compare two folders that keep made")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    options = parser.parse_args()
    if options.verb == "compare":
        missing = [str(f) for f in (options.before, options.after) if not f.is_dir()]
        if missing:
            parser.error(f"no such folder: {', '.join(missing)} (make it with: keep FOLDER)")
        return compare(options.before, options.after)
    programs = options.programs or sorted(p for p in (ROOT / "tests" / "scripts").glob("*.py")
                                          if not p.name.startswith("bench_"))
    missing = [str(p) for p in programs if not p.is_file()]
    if missing:
        parser.error(f"no such program: {', '.join(missing)}")
    keep(options.out, [p.resolve() for p in programs], options.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
