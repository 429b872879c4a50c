"""Running a program as ``__main__``, as ``python script.py`` (or ``python -m module``) would.

What Python does, and so what this does: ``sys.argv`` as given; first on ``sys.path`` the folder
of the script's real file (a symbolic link resolved), or the folder or zip archive itself that
is run, and nothing for a script under ``-P`` (``PYTHONSAFEPATH``); a new ``__main__`` module with
the script's absolute ``__file__``, its loader and an empty ``__annotations__``, left in
``sys.modules`` after the run (``atexit`` handlers that ``import __main__`` find it).
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import io
import linecache
import os
import runpy
import sys
import types
import zipfile
from typing import Any

_KEPT: list[Any] = []  # the module that was __main__ before (the command's own): kept alive


class _EditedFinder(importlib.abc.MetaPathFinder):
    """Loads a module whose file was edited from its edited copy."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        origin = os.path.abspath(spec.origin) if spec is not None and spec.origin else None
        if origin not in self.files:
            return None
        return importlib.util.spec_from_file_location(
            name, self.files[origin], submodule_search_locations=spec.submodule_search_locations)


def _keep_source(event: str, args: tuple) -> None:
    """An audit hook: the source of code compiled from a string (``exec``, ``compile``) under
    a name that is no file (``<string>``, ``<training>``), kept where the search for the
    program's names reads sources (:mod:`linecache`), so that the variables of exec'd code are
    searched as a script's are."""
    if event != "compile":
        return
    source, name = args[0], args[1]
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError:
            return
    if isinstance(source, str) and isinstance(name, str) and name not in _FILES_SEEN:
        if os.path.isfile(name):
            _FILES_SEEN.add(name)
            return
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)


_FILES_SEEN: set[str] = set()


def run_as_main(module: str | None, target: list[str], files: dict[str, str] | None = None) -> None:
    """Run the script (``target[0]``, its arguments after it: a file, a folder or a zip archive
    with a ``__main__.py``) or the module as ``__main__``, as Python itself would. ``files``:
    edited copies to run in place of the program's own files (the verifying run). Code the
    program compiles from a string keeps its source for the diagnosis (``_keep_source``)."""
    if not _FILES_SEEN:  # once per process (an audit hook stays for good)
        _FILES_SEEN.add("")
        sys.addaudithook(_keep_source)
    if files:
        sys.meta_path.insert(0, _EditedFinder(files))
    if module is not None:
        # What `python -m` itself calls, in a new __main__: its errors (no such module, a
        # package without __main__, a package's __init__ that raises) and its frames as Python's.
        sys.argv = ["-m", *target]  # while its package is imported, as `python -m` has it
        _KEPT.append(sys.modules.get("__main__"))
        sys.modules["__main__"] = types.ModuleType("__main__")
        runpy._run_module_as_main(module, alter_argv=True)
        return
    if target[0] in ("-c", "-"):
        _run_text(target)
        return
    path = target[0]
    sys.argv = list(target)
    archive = os.path.isdir(path) or zipfile.is_zipfile(path)
    first = os.path.abspath(path) if archive else os.path.dirname(os.path.realpath(path))
    if not sys.flags.safe_path:
        sys.path[0] = first  # in place of the folder `python -m` put there
    elif archive:
        sys.path.insert(0, first)
    _KEPT.append(sys.modules.get("__main__"))
    if archive:
        sys.modules["__main__"] = types.ModuleType("__main__")
        runpy._run_module_as_main("__main__", alter_argv=False)  # what Python itself calls
    else:  # __file__ as Python makes it: joined to the working folder, not normalised
        _run_script(os.path.join(os.getcwd(), path), (files or {}).get(os.path.abspath(path)))


def _run_script(script: str, edited: str | None) -> None:
    """Run ``script`` (or, in its place, its ``edited`` copy) in a new ``__main__`` module."""
    source = edited or script
    with io.open_code(source) as handle:
        code = compile(handle.read(), source, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": script, "__cached__": None, "__builtins__": builtins,
                          "__loader__": importlib.machinery.SourceFileLoader("__main__", script),
                          "__annotations__": {}})
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


STDIN: list[str] = []  # the program read from standard input (``-``), once


def _run_text(target: list[str]) -> None:
    """``-c CODE [args]`` or ``- [args]`` (the program read from standard input), as Python runs
    them: ``sys.argv[0]`` ``-c`` or ``-``, the working folder ("") first on ``sys.path`` (not
    under -P), the code named ``<string>`` or ``<stdin>``, a ``__main__`` without ``__file__``."""
    named = {}
    if target[0] == "-c":
        source, name, sys.argv = target[1], "<string>", ["-c", *target[2:]]
    else:
        if not STDIN:
            STDIN.append(sys.stdin.read())
        source, name, sys.argv = STDIN[0], "<stdin>", list(target)
        named = {"__file__": name, "__cached__": None}
    if not sys.flags.safe_path:
        sys.path[0] = ""
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # its lines read
    code = compile(source, name, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__annotations__": {},
                          "__loader__": importlib.machinery.BuiltinImporter, **named})
    _KEPT.append(sys.modules.get("__main__"))
    sys.modules["__main__"] = main
    exec(code, main.__dict__)
