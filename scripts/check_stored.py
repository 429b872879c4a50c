"""Refuse to build from stored notebook outputs that cannot be trusted (see nbtools.stored_problems)."""

from __future__ import annotations

import sys

from nbtools import ROOT, notebook_paths, stored_problems


def main() -> int:
    bad = 0
    for path in notebook_paths():
        for problem in stored_problems(path):
            print(f"{path.relative_to(ROOT)}: {problem}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
