"""A failure inside ``with`` blocks, on programs of tests/scripts/n5_*.py run by the command as a
user starts it: one that the blocks only see on its way out is said after Python's traceback, as
one nothing catches; one that a ``with`` block swallows is still said, once (its repeat at the
same call in one line), and the program's own output and exit code stay its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

import forked_command
from places import TESTS

SCRIPTS = TESTS / "scripts"
SAID = "autograd_lens: this backward reaches a graph that an earlier call already went through."
SWALLOWED = "n5_error_swallowed_by_a_with_block.py"  # ends normally: its with block swallows


def run(script: str, command: bool = True) -> tuple[int, str, str]:
    """The command (``--no-verify``, a process forked from the tests' command server), or the
    program under plain ``python``."""
    if command:
        return forked_command.command(["--no-verify", script], SCRIPTS, dict(os.environ), 300)
    done = subprocess.run([sys.executable, script], cwd=SCRIPTS, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_a_failure_inside_a_with_block_is_said_after_the_traceback():
    code, _, err = run("n5_backward_inside_a_timing_block.py")
    assert code == 1 and err.count(SAID) == 1, err
    assert err.index("RuntimeError: Trying to backward") < err.index(SAID), err


def test_a_failure_a_with_block_swallows_is_said_once():
    """Both failures the block swallows are said: the first in full, the second, at the same
    call, in one line; the program's output is its own."""
    code, out, err = run(SWALLOWED)
    assert (code, out) == run(SWALLOWED, command=False)[:2] == (0, "carried on\n")
    assert err.count(SAID) == 1, err
    assert f"the same error at {SWALLOWED}:16 again, 1 time so far" in err, err
