"""Keeping the watch out of sight of the program it watches.

A wrapper around torch's backward is a Python frame, so an exception that passes through it
gets a traceback entry for it: a program that prints its own traceback (``log.exception``, a
framework's error handler) would show a frame of ``autograd_lens``. :func:`without_ours`
gives the traceback without those entries, which the wrapper re-raises the exception with.
:func:`may_be_caught` tells, from the frames' exception tables, whether an exception raised at
a call could be caught on its way out (a ``try``; not a ``with`` block alone, which passes it on
unless its ``__exit__`` swallows it).
"""

from __future__ import annotations

import dis
import os
from typing import Any

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def ours(frame: Any) -> bool:
    """Whether ``frame`` runs code of this package."""
    return frame.f_code.co_filename.startswith(PACKAGE)


def _runner(frame: Any) -> bool:
    """Whether ``frame`` is the command's or runpy's: where the program's frames end."""
    name = frame.f_code.co_filename
    return name.startswith((PACKAGE, "<frozen runpy")) or os.path.basename(name) == "runpy.py"


def _first_not_ours(frame: Any) -> Any:
    while frame is not None and ours(frame):
        frame = frame.f_back
    return frame


def without_ours(entry: Any) -> Any:
    """A traceback past its leading entries in this package's files. A wrapper of this
    package sets the exception passing through it to this, then re-raises it with a bare
    ``raise`` (which adds no entry): the traceback is then the one Python would have made
    without the wrapper, its type, message, cause and context unchanged."""
    while entry is not None and entry.tb_frame.f_code.co_filename.startswith(PACKAGE):
        entry = entry.tb_next
    return entry


def may_be_caught(frame: Any) -> bool:
    """Whether an exception raised now, in the call ``frame`` is making, could be caught (by a
    ``try``, or a ``finally`` that acts on it) by a frame outside this package on its way out. ``frame``: the
    innermost frame to look at; the search stops at the command's runner (or runpy's)."""
    frame = _first_not_ours(frame)
    while frame is not None and not _runner(frame):
        if _in_handler_range(frame):
            return True
        frame = frame.f_back
    return False


def _in_handler_range(frame: Any) -> bool:
    """Whether a handler of the frame's code that may catch (a ``try``) covers the instruction
    it runs, directly or past the ``with`` blocks around it. A ``with`` block alone re-raises
    unless its ``__exit__`` swallows the error, which is rare: the error most likely reaches
    the command, which then says the diagnosis after Python's traceback, as for no handler."""
    table = getattr(dis, "_parse_exception_table", None)
    if table is None:
        return True  # cannot tell: say it may be caught
    entries, offset = table(frame.f_code), frame.f_lasti
    names = {i.offset: i.opname for i in dis.get_instructions(frame.f_code)}
    for _ in range(len(entries) + 1):
        entry = next((e for e in entries if e.start <= offset <= e.end), None)
        if entry is None:
            return False
        reraise = _reraised_at(names, entry.target)
        if reraise is None:
            return True  # an ``except`` or a ``finally``: it may catch, or act on the error
        offset = reraise
    return True


def _reraised_at(names: dict[int, str], target: int) -> int | None:
    """For a handler that only passes the error on (a ``with`` block's exit, which re-raises
    unless ``__exit__`` swallows it, or the cleanup after it), the offset of its ``RERAISE``;
    else None."""
    ops = [(offset, names[offset]) for offset in sorted(names) if offset >= target][:5]
    kinds = [name for _, name in ops]
    if kinds[:2] == ["PUSH_EXC_INFO", "WITH_EXCEPT_START"] or \
            kinds[:3] == ["COPY", "POP_EXCEPT", "RERAISE"]:
        return next((offset for offset, name in ops if name == "RERAISE"), None)
    return None
