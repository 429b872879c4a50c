"""Where an operation ran, as the replay's recording keeps it: the innermost frame in the user's
files with the frames that called it, and the library line under it; each frame kept as small
numbers while the program runs, and resolved into files and lines only at the end."""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

from ..source.candidates import NOT_USERS
from .unseen import PACKAGE

_OURS = PACKAGE  # this package's folder: every frame of it, whichever folder
_TORCH = os.path.dirname(torch.__file__) + os.sep
# Frames between an operation's caller and the mode: this package's, and PyTorch's plumbing.
_PLUMBING = (_OURS,) + tuple(_TORCH + p for p in ("_dynamo" + os.sep, "_compile.py", "_ops.py",
                                                    os.path.join("utils", "_python_dispatch.py")))
_CHAIN = 8  # user frames kept per write and per made node


def is_users(filename: str) -> bool:
    """Whether ``filename`` is one of the user's files (not torch, the standard library,
    installed packages or this package; not Python's own ``<frozen ...>``)."""
    return not filename.startswith(NOT_USERS) and not filename.startswith("<frozen") and \
        not filename.startswith(_OURS)


class _Sites:
    """Frames as small numbers: a site is (the user's frame and its callers, the library frame
    under it), each frame as (code, offset); resolved into files and lines only at the end."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}
        self.sites: list[Any] = []
        self._users: dict[Any, bool] = {}
        self._places: dict[tuple[Any, int], dict] = {}  # each frame read once (see _place)

    def _user(self, code: Any) -> bool:
        found = self._users.get(code)
        if found is None:
            found = self._users[code] = is_users(code.co_filename)
        return found

    def here(self, depth: int, chain: bool) -> int:
        """The site of the caller ``depth`` frames up (past this package's frames)."""
        return self.locate(depth + 1, chain)[0]

    def locate(self, depth: int, chain: bool) -> tuple[int, Any, Any]:
        """The site of the caller ``depth`` frames up, the user's frame in it (or None), and
        the caller itself: the innermost frame past the plumbing (a library's or the user's)."""
        return self.at(sys._getframe(depth), chain)

    def at(self, frame: Any, chain: bool) -> tuple[int, Any, Any]:
        """:meth:`locate` from ``frame`` on."""
        while frame is not None and frame.f_code.co_filename.startswith(_PLUMBING):
            frame = frame.f_back
        caller, library = frame, None
        if frame is not None and not self._user(frame.f_code):
            library = (frame.f_code, frame.f_lasti)
        while frame is not None and not self._user(frame.f_code):
            frame = frame.f_back
        innermost, users = frame, []
        while frame is not None and len(users) < (_CHAIN if chain else 1):
            if self._user(frame.f_code):
                users.append((frame.f_code, frame.f_lasti))
            frame = frame.f_back
        key = (tuple(users), library)
        number = self.index.get(key)
        if number is None:
            number = self.index[key] = len(self.sites)
            self.sites.append(key)
        return number, innermost, caller

    def resolve(self, number: int) -> dict:
        """A site as JSON: ``user`` (file, line, function, text), ``chain`` (the user's callers,
        innermost first) and ``library`` (the library line under the user's, or None)."""
        users, library = self.sites[number]
        chain = [self._place(code, offset) for code, offset in users]
        return {"user": chain[0] if chain else None, "chain": chain[1:],
                "library": self._place(*library) if library else None}

    def _place(self, code: Any, offset: int) -> dict:
        """:func:`_place`, read once per frame (a node made in a loop is made at the same
        frames as thousands of others); each caller gets a copy of its own."""
        found = self._places.get((code, offset))
        if found is None:
            found = self._places[(code, offset)] = _place(code, offset)
        return dict(found)


def _place(code: Any, offset: int) -> dict:
    """The file, line, function and source text of the instruction at ``offset`` in ``code``."""
    import linecache

    line = next((line for start, end, line in code.co_lines()
                 if start <= offset < end and line is not None), code.co_firstlineno)
    text = linecache.getline(code.co_filename, line).strip()
    return {"file": code.co_filename, "line": line, "function": code.co_name,
            "qualname": getattr(code, "co_qualname", code.co_name),
            "text": text.split("  #")[0] if "  #" in text else text}

