"""``python -m autograd_lens [--report FILE] [--verify] script.py [args...]``: run a script
unchanged, and when its backward fails on a freed (or modified) graph, name the variables that
carry the old graph in, the line where each enters, the pattern, its fix, the book's page about
it, and the fix as an edit of the program's own lines (with ``--verify``, run once to check it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import types
from typing import Any, NoReturn

from .edits import unified_diff
from .rules import Fix
from .verify import CallCounter, Rerun, describe, run_as_main, verify
from .watch import Watch

_PROG = "python -m autograd_lens"
_USAGE = f"{_PROG} [--report FILE] [--verify] (script.py | -m module) [args ...]"
_DESCRIPTION = """\
Run a Python script (or, with -m, a module) exactly as `python script.py` would: the same
sys.argv, its folder first on sys.path, __name__ == "__main__", the same output and exit code.
If a backward (or torch.autograd.grad) fails with "Trying to backward through the graph a
second time" or with the in-place (version counter) error, Python's usual traceback is followed
by a diagnosis: the variables of your program that carry the old graph into this step (most
likely first, each with the file, line and function where it enters the step), the likely
pattern, its fix, and the book's page about it; then the fix written as an edit of your own
lines (a unified diff; where the intent is unclear, other edits follow, each saying what it
computes). Healthy runs print nothing extra.

With --verify, the command then applies the edit to a temporary copy of the program (your files
are not touched) and runs it again in a second Python process (started with the first run, so
that it imports torch meanwhile), until the backward call that failed and a few more have run or
the program ends, and says whether the error is gone. That shows the error is gone, not that
the edit computes what you meant. The second run repeats the program's side effects (files it
writes, loggers, network calls) up to where it is stopped: use --verify only where that is
harmless. The exit code stays the first run's."""
_EPILOG = """\
examples:
  python -m autograd_lens train.py --epochs 3
  python -m autograd_lens --report diagnosis.json train.py
  python -m autograd_lens --verify train.py
  python -m autograd_lens -m mypackage.train"""
_SCRIPT_SUFFIXES = (".py", ".pyw")
_TORCH = os.path.dirname(importlib.util.find_spec("torch").origin) + os.sep


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        _bad_use(message)


def _bad_use(message: str) -> NoReturn:
    """Bad use of the command: one line on stderr, exit code 2."""
    sys.stderr.write(f"{_PROG}: error: {message}\n")
    raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_PROG, usage=_USAGE, description=_DESCRIPTION, epilog=_EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", metavar="FILE",
                        help="also write the diagnosis as JSON to FILE (written after every run; "
                             '"error" is null when no backward failed)')
    parser.add_argument("--verify", action="store_true",
                        help="after a failure, run the program again with the suggested edit "
                             "(from a temporary copy) and say whether the error is gone; this "
                             "repeats the program's side effects")
    parser.add_argument("-m", dest="module", metavar="module",
                        help="run a module as a script, as `python -m module` does")
    return parser


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The command's own options, and the rest: the script (or module) and its arguments."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in ("--report", "-m"):
            if word == "-m":
                return argv[:index + 2], argv[index + 2:]
            index += 2
        elif word.startswith("-m") and len(word) > 2:
            return argv[:index + 1], argv[index + 1:]
        elif word.startswith("-") and word != "-":
            index += 1
        else:
            return argv[:index], argv[index:]
    return argv, []


def _check_script(path: str) -> None:
    if not os.path.exists(path):
        _bad_use(f"cannot find the script {path!r}")
    if os.path.isdir(path) or path.endswith(_SCRIPT_SUFFIXES):
        return
    try:
        with open(path, "rb") as handle:
            compile(handle.read(), path, "exec")
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
        _bad_use(f"{path!r} is not a Python script")


def _check_report(path: str | None) -> None:
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        _bad_use(f"cannot write the report {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        _bad_use(f"cannot write the report {path!r}: it is a folder")


def _ours(filename: str) -> bool:
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    return filename.startswith((here, "<frozen runpy")) or os.path.basename(filename) == "runpy.py"


def _user_traceback(tb: Any) -> Any:
    """The traceback without the frames of this command (its runner and its thin wrappers
    around backward) and of runpy: what ``python script.py`` would show."""
    kept = []
    while tb is not None:
        if not _ours(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


def _failed_at(tb: Any) -> tuple[str, int] | None:
    """The file and line of the user's call of backward (or autograd.grad) that raised: the
    last frame of the user's whose next frame, past this command's, is torch's ``backward`` or
    ``grad``; else the innermost frame of the user's."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name, tb.tb_lineno))
        tb = tb.tb_next
    theirs = [f for f in frames if not _ours(f[0])]
    found = None
    for (name, _, line), following in zip(theirs, theirs[1:] + [None]):
        if name.startswith(_TORCH):
            continue
        if following is not None and following[0].startswith(_TORCH) and \
                following[1] in ("backward", "grad"):
            return name, line
        found = (name, line)
    return found


def _shown(file: str) -> str:
    """A file's name as the diff shows it: relative to the working folder when inside it."""
    relative = os.path.relpath(file) if os.path.isabs(file) else file
    return file if relative.startswith("..") else relative


def _edit_text(fixes: list[Fix], pattern: Any) -> str:
    """The suggested edit as a unified diff, then the other choices, each with what it computes;
    without one, why there is none."""
    if not fixes:
        if pattern is None:
            return ""
        why = "no pattern shows in the evidence" if pattern.key == "unknown" else \
            "the source does not show plainly where the fix goes; the fix above says what to change"
        return f"autograd_lens: no edit of your lines is suggested: {why}.\n"
    parts = []
    for index, fix in enumerate(fixes):
        lead = "The fix as an edit of your program" if index == 0 else "Or"
        parts.append(f"{lead} ({fix.computes}):\n{unified_diff(list(fix.edits), _shown)}")
    return "\n".join(parts)


def _write_report(path: str | None, watch: Watch, error: BaseException | None,
                  fixes: list[Fix], verified: dict | None) -> None:
    if path is None:
        return
    if watch.finding is not None and watch.explains(error):
        data = watch.finding.as_dict()
    else:
        data = {"error": None, "carriers": [], "frontier": [], "pattern": "", "title": "",
                "fix": "", "page": "", "hidden": []}
    first, others = (fixes[0], fixes[1:]) if fixes else (None, [])
    data.update({"edits": [e.as_dict() for e in first.edits] if first else [],
                 "computes": first.computes if first else "",
                 "alternatives": [[e.as_dict() for e in fix.edits] for fix in others],
                 "alternatives_computes": [fix.computes for fix in others],
                 "verified": verified})
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (a script's ``sys.exit`` passes through)."""
    own, target = _split(list(sys.argv[1:] if argv is None else argv))
    options = _parser().parse_args(own)
    if options.module is None:
        if not target:
            _bad_use(f"no script given; usage: {_USAGE}")
        _check_script(target[0])
    else:
        # Finding the module imports its package: its __init__ must see what `python -m` gives it.
        sys.argv = ["-m", *target]
        try:
            found = importlib.util.find_spec(options.module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            _bad_use(f"no module named {options.module!r}")
    _check_report(options.report)
    watch = Watch()
    counter = CallCounter() if options.verify else contextlib.nullcontext()
    rerun = Rerun() if options.verify else None  # importing torch while the first run goes on
    error: BaseException | None = None
    fixes: list[Fix] = []
    verified = None
    try:
        with watch, counter:
            run_as_main(options.module, target)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as caught:  # noqa: BLE001 - reported as Python would, then explained
        error = caught
        failed = _failed_at(caught.__traceback__)
        shown = caught.with_traceback(_user_traceback(caught.__traceback__))
        sys.excepthook(type(shown), shown, shown.__traceback__)
        if watch.finding is not None and watch.explains(caught):
            finding = watch.finding
            if finding.pattern is not None:
                fixes = finding.pattern.fixes(finding.carriers, failed)
            edit = _edit_text(fixes, finding.pattern)
            sys.stderr.write("\n" + str(finding) + "\n" + (edit and "\n" + edit))
            if options.verify:
                edits = list(fixes[0].edits) if fixes else []
                verified = verify(edits, options.module, target, counter.count, rerun)
                sys.stderr.write("\n" + describe(verified, counter.count) + "\n")
        return 1
    finally:
        if rerun is not None:
            rerun.close()
        _write_report(options.report, watch, error, fixes, verified)
    return 0


if __name__ == "__main__":
    sys.exit(main())
