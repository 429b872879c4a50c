"""What the watch (:class:`autograd_lens.run.watch.Watch`) keeps for each thread: the backward
calls running in it, the calls recorded, and what a nested call that failed left for the outer
one. The main thread's state is a plain attribute of the watch; every other thread's is a
thread-local (:class:`OtherThreads`).
"""

from __future__ import annotations

import threading
from typing import Any

from ..lens.history import History


class State:
    """What the watch keeps for one thread: sequence numbers, and so the calls recorded, are a
    thread's own, and so is the count of backward calls running."""

    __slots__ = ("depth", "inner", "history", "nested", "inner_roots")

    def __init__(self, history: History) -> None:
        self.depth = 0  # backward calls running: more than one, a backward in a backward
        self.inner: Any = None  # a nested backward failed: its finding (False: none)
        self.history = history
        # The calls that backward calls run by the running outermost one made (a reentrant
        # checkpoint's, a custom Function's autograd.grad): earlier calls for a nested one that
        # fails in the same outermost call, forgotten when it ends.
        self.nested: list[Any] = []
        # The outputs of the backward calls that failed inside the one failing now (a reentrant
        # checkpoint's): the failing call reaches what they reach, handed over with its own.
        self.inner_roots: list[Any] = []


class OtherThreads(threading.local):
    """The state of each thread but the main one (whose state is a plain attribute: reading a
    thread-local costs a microsecond or so on each call)."""

    def __init__(self) -> None:
        self.state = State(History())
