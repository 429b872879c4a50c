"""``python -m autograd_lens [--report FILE] script.py [args...]``: run a script unchanged, and
when its backward fails on a freed (or modified) graph, name the variables that carry the old
graph in, the line where each enters, the pattern, its fix, and the book's page about it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import runpy
import sys
import types
from typing import Any, NoReturn

from .watch import Watch

_PROG = "python -m autograd_lens"
_USAGE = f"{_PROG} [--report FILE] (script.py | -m module) [args ...]"
_DESCRIPTION = """\
Run a Python script (or, with -m, a module) exactly as `python script.py` would: the same
sys.argv, its folder first on sys.path, __name__ == "__main__", the same output and exit code.
If a backward (or torch.autograd.grad) fails with "Trying to backward through the graph a
second time" or with the in-place (version counter) error, Python's usual traceback is followed
by a diagnosis: the variables of your program that carry the old graph into this step (most
likely first, each with the file, line and function where it enters the step), the likely
pattern, its fix, and the book's page about it. Healthy runs print nothing extra."""
_EPILOG = """\
examples:
  python -m autograd_lens train.py --epochs 3
  python -m autograd_lens --report diagnosis.json train.py
  python -m autograd_lens -m mypackage.train"""
_SCRIPT_SUFFIXES = (".py", ".pyw")


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


def _write_report(path: str | None, watch: Watch, error: BaseException | None) -> None:
    if path is None:
        return
    if watch.finding is not None and watch.explains(error):
        data = watch.finding.as_dict()
    else:
        data = {"error": None, "carriers": [], "frontier": [], "pattern": "", "title": "",
                "fix": "", "page": "", "hidden": []}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")


def _run(module: str | None, target: list[str]) -> None:
    """Run the script or module as ``__main__``, as Python itself would."""
    if module is not None:
        sys.argv = [module, *target]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    script = target[0]
    sys.argv = list(target)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(os.path.abspath(script), run_name="__main__")


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
    error: BaseException | None = None
    try:
        with watch:
            _run(options.module, target)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as caught:  # noqa: BLE001 - reported as Python would, then explained
        error = caught
        shown = caught.with_traceback(_user_traceback(caught.__traceback__))
        sys.excepthook(type(shown), shown, shown.__traceback__)
        if watch.finding is not None and watch.explains(caught):
            sys.stderr.write("\n" + str(watch.finding) + "\n")
        return 1
    finally:
        _write_report(options.report, watch, error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
