"""The program's frames on the stack at a backward call: the user's, innermost first, past the
frames of Python's own library, installed packages, PyTorch and this package (see
:data:`autograd_lens.source.candidates.NOT_USERS`); the frames a failure is explained from.
"""

from __future__ import annotations

from typing import Any

from ..source.candidates import NOT_USERS
from ..lens.history import user_frame


def user_frames() -> list[Any]:
    """The user's frames, innermost first, from the caller of backward outwards."""
    frames = []
    frame = user_frame(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(NOT_USERS) and not name.startswith("<frozen"):
            frames.append(frame)
        frame = frame.f_back
    return frames


def first_user_frame(frame: Any) -> Any:
    """The first of :func:`user_frames` from ``frame`` outwards (None if there is none)."""
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(NOT_USERS) and not name.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None
