"""The program's child processes, as the command speaks of them: who a child is (its pid, its
parent's, how it was started), whether an error reports one that a child raised, and what is
said when such an error ends the program (where its diagnosis is, or that none was made).
"""

from __future__ import annotations

import os

from ..lens.errors import FREED_GRAPH_PATTERN, INPLACE_PATTERN, error_kind


# A child started by spawn or forkserver (see autograd_lens.text.spawned): its pid and that method.
START_METHOD: list = []


def child_identity() -> dict:
    """This process, as a child of the program's: its pid, its parent's, how it was started."""
    import multiprocessing

    process = multiprocessing.current_process()
    if START_METHOD and START_METHOD[0] == os.getpid():
        method = START_METHOD[1]  # what started it, not the default its parent had
    else:
        method = multiprocessing.get_start_method(allow_none=True) or "fork"
    how = "os.fork" if process.name == "MainProcess" else \
        f"multiprocessing, {method}: {process.name}"
    return {"pid": os.getpid(), "parent": os.getppid(), "how": how}


def child_note(children: list[dict]) -> str:
    """Said after an error that a child process raised and the program re-raised: where its
    diagnosis is (said in the child, if the child was forked), or that none was made."""
    if not children:
        return CHILD_NOTE
    pids = ", ".join(str(c["pid"]) for c in children)
    return (f"\nautograd_lens: this error happened in child process {pids}; its diagnosis was "
            "said there (above) and is in the report's \"children\"; no replay or edit run is "
            "made for a child's failure.\n")


CHILD_NOTE = ("\nautograd_lens: this error happened in a child process, which the command does not "
              "watch; to see the diagnosis, run that part in the command's own process.\n")


def from_a_child(error: BaseException) -> bool:
    """Whether ``error`` reports a freed-graph (or in-place) error raised elsewhere: its text
    holds one, but it is not one itself (torch.multiprocessing.spawn's ProcessRaisedException,
    a process pool's error)."""
    text = str(error)
    return error_kind(error) is None and bool(
        FREED_GRAPH_PATTERN.search(text) or INPLACE_PATTERN.search(text))
