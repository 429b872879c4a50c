"""Naming a place in the program the way its reader knows it.

A line of the program's own file is named by the file's name (``train.py:47``); a line of an
installed library by its path inside the package, relative to the ``sys.path`` entry it is
imported from (``lightning/pytorch/core/module.py:1137``, not ``module.py:1137``); a line of a
notebook cell by the cell's number, as Jupyter shows it (``In [4], line 3``), not by the kernel's
temporary file. A cell run twice keeps one file (the kernel names it by its code): the number
of the run that made a call is read when the call is made (:func:`cell_number`).

>>> import json
>>> place(json.__file__, 1)
'json/__init__.py:1'
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from typing import Any

_CELL_FILE = re.compile(r"ipykernel_\d+|<ipython-input")
_NUMBER = re.compile(r"\d+")
# Where installed code lives: the standard library and site-packages (a virtual environment's
# site-packages may sit inside the working folder; it is not the program's own).
_INSTALLED = tuple({os.path.realpath(sysconfig.get_paths()[key]) + os.sep
                    for key in ("stdlib", "purelib", "platlib")})


def is_cell(file: str) -> bool:
    """Whether ``file`` is a notebook cell's (the kernel's temporary file, or IPython's name)."""
    return bool(_CELL_FILE.search(file))


def _shell() -> Any:
    """The running IPython shell (None outside IPython; IPython is never imported here)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None


def cell_number(file: str) -> int | None:
    """The execution count of the latest run of the cell whose code is in ``file`` (None when
    ``file`` is not a cell of the running shell). Read at the moment of a call, it is that
    call's run."""
    if not is_cell(file):
        return None
    shell = _shell()
    try:
        label = shell.compile.format_code_name(file) if shell is not None else None
    except (AttributeError, TypeError):
        return None
    found = _NUMBER.search(label[1]) if label else None
    return int(found.group()) if found else None


def cell_numbers() -> dict[str, int] | None:
    """The running shell's numbers of its cells, by file (the latest run of each; None outside
    IPython): a call reads its cell's number there when it is made, a dictionary look-up."""
    shell = _shell()
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    return names if isinstance(names, dict) else None


def _inside(file: str, folder: str) -> bool:
    return bool(folder) and file.startswith(folder.rstrip(os.sep) + os.sep)


def _program_folders() -> list[str]:
    """The folders of the program's own files: the working folder, and the folder of the
    ``__main__`` module's file (the script; none in a notebook), unless it is installed."""
    folders = [os.path.realpath(os.getcwd())]
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(main, str) and not os.path.realpath(main).startswith(_INSTALLED):
        folders.append(os.path.dirname(os.path.realpath(main)))
    return folders


def _library_entry(file: str) -> str | None:
    """The ``sys.path`` entry a library's ``file`` is imported from (the deepest that holds
    it), or None when ``file`` is the program's own (inside its folders, not installed)."""
    real = os.path.realpath(file)
    installed = real.startswith(_INSTALLED)
    if not installed and any(_inside(real, folder) for folder in _program_folders()):
        return None
    entries = [os.path.realpath(entry) for entry in sys.path if entry]
    holding = [entry for entry in entries if _inside(real, entry)]
    return max(holding, key=len) if holding else None


def shown_file(file: str, cell: int | None = None) -> str:
    """How a file is named: ``In [4]`` for a cell (``cell``: the run's number, when known),
    the path inside its package for a library's file, else the file's name."""
    if is_cell(file):
        number = cell or cell_number(file)
        return f"In [{number}]" if number else "a cell"
    entry = _library_entry(file)
    if entry is not None:
        return os.path.relpath(os.path.realpath(file), entry).replace(os.sep, "/")
    return os.path.basename(file)


def place(file: str, line: int, cell: int | None = None) -> str:
    """A line, named as its reader knows it: ``In [4], line 3``, ``lightning/pytorch/core/
    module.py:1137`` or ``train.py:47``."""
    if is_cell(file):
        return f"{shown_file(file, cell)}, line {line}"
    return f"{shown_file(file)}:{line}"
