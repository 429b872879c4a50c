"""The command's own arguments: its options told from the program's (as ``python`` tells them:
``-m``, ``-c``, ``-``, ``--``, none abbreviated), the script checked to be one Python can run,
and the report's file tried before the program runs; bad use is one line on stderr and exit
code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from typing import NoReturn

from .usage import DESCRIPTION, EPILOG, PROG, USAGE

_SCRIPT_SUFFIXES = (".py", ".pyw")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        bad_use(message)


def bad_use(message: str) -> NoReturn:
    """Bad use of the command: one line on stderr, exit code 2."""
    sys.stderr.write(f"{PROG}: error: {message}\n")
    raise SystemExit(2)


def parser() -> argparse.ArgumentParser:
    # No abbreviations (--rep for --report): Python takes none of its own options abbreviated.
    parser = _Parser(prog=PROG, usage=USAGE, description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--report", metavar="FILE",
                        help="also write the diagnosis as JSON to FILE (before the program "
                             "runs, at the failure, after every run and at the end; \"error\" "
                             "is null when no backward failed)")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="print the suggested edits without running them (they are said "
                             "to be not run)")
    parser.add_argument("--verify", dest="verify", action="store_true",
                        help="run each suggested edit in a sandbox before printing it (the "
                             "default; kept for compatibility)")
    parser.add_argument("-m", dest="module", metavar="module",
                        help="run a module as a script, as `python -m module` does")
    return parser


def split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The command's own options, and the rest: the script (or module) and its arguments."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":  # the end of the command's options, as for python itself
            return argv[:index], argv[index + 1:]
        if word in ("--report", "-m"):
            if word == "-m":
                return argv[:index + 2], argv[index + 2:]
            index += 2
        elif word.startswith("-m") and len(word) > 2:
            return argv[:index + 1], argv[index + 1:]
        elif word == "-c":  # the program as text: its arguments follow it, as for python
            return argv[:index], argv[index:]
        elif word.startswith("-c"):
            return argv[:index], ["-c", word[2:], *argv[index + 1:]]
        elif word.startswith("-") and word != "-":
            index += 1
        else:
            return argv[:index], argv[index:]
    return argv, []


def check_script(path: str) -> None:
    if not os.path.exists(path):
        bad_use(f"cannot find the script {path!r}")
    if path.endswith(".ipynb"):
        bad_use(f"{path!r} is a notebook: in the notebook, run %load_ext autograd_lens in a "
                 "cell before the training cells (this command runs Python scripts)")
    if os.path.isdir(path) or path.endswith(_SCRIPT_SUFFIXES) or zipfile.is_zipfile(path):
        return
    try:
        with open(path, "rb") as handle:
            compile(handle.read(), path, "exec")
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
        bad_use(f"{path!r} is not a Python script")


def check_report(path: str | None) -> str | None:
    """The report's absolute path (relative to where the command started), once it is known
    that a file can be written there: tried now, before the program runs."""
    if path is None:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        bad_use(f"cannot write the report {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        bad_use(f"cannot write the report {path!r}: it is a folder")
    existed = os.path.exists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as why:
        bad_use(f"cannot write the report {path!r}: {why.strerror or why}")
    if not existed:
        os.remove(path)
    return os.path.abspath(path)
