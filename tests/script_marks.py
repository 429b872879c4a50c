"""What a program of tests/scripts says in its comments that the command must name first:
``# enters: NAME`` (the variable that holds the old graph, on the line where it enters the failing
step) and ``# write: NAME`` (the tensor written in place, on the line of that write), each as
(name, line)."""

from __future__ import annotations

import re
from pathlib import Path


def expectations(script: Path) -> dict:
    found = {}
    for number, line in enumerate(script.read_text().splitlines(), 1):
        for key in ("enters", "write"):
            match = re.search(rf"# {key}: (\S+)", line)
            if match:
                found[key] = (match.group(1), number)
    return found
