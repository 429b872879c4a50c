"""Re-execute notebooks in fresh kernels and store their outputs: `make refresh [NB=path ...]`.

nbclient runs the notebooks; this adds what `jupyter nbconvert --execute --inplace` does not do:
the digest of the code the outputs came from, paths of this machine scrubbed from tracebacks,
and the stored-output checks right after (see nbtools.py).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from nbtools import notebook_paths, refresh, stored_problems


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or notebook_paths()
    failed = 0
    for path in paths:
        start = time.perf_counter()
        refresh(path)
        problems = stored_problems(path)
        took = time.perf_counter() - start
        print(f"{path.name}: {took:.1f} s" + ("" if not problems else "  PROBLEMS:"))
        for problem in problems:
            print("   ", problem)
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
