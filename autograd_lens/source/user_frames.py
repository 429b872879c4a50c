"""The program's frames on the stack: the user's, innermost first, past the frames of Python's
own library, installed packages, PyTorch and this package (see
:data:`autograd_lens.source.candidates.NOT_USERS`); the frames a failure is explained from, and
those :func:`~autograd_lens.diagnose` reads the program's names in.
"""

from __future__ import annotations

from typing import Any

from ..lens.history import user_frame
from .candidates import NOT_USERS


def is_users(frame: Any) -> bool:
    """Whether ``frame`` runs the user's code (not a library's, not Python's frozen modules)."""
    name = frame.f_code.co_filename
    return not name.startswith(NOT_USERS) and not name.startswith("<frozen")


def users_from(frame: Any) -> list[Any]:
    """The user's frames from ``frame`` outwards, innermost first."""
    frames = []
    while frame is not None:
        if is_users(frame):
            frames.append(frame)
        frame = frame.f_back
    return frames


def user_frames() -> list[Any]:
    """The user's frames, innermost first, from the caller of backward outwards."""
    return users_from(user_frame(2))


def first_user_frame(frame: Any) -> Any:
    """The first of :func:`user_frames` from ``frame`` outwards (None if there is none)."""
    while frame is not None and not is_users(frame):
        frame = frame.f_back
    return frame
