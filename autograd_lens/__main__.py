"""``python -m autograd_lens [--report FILE] [--no-verify] script.py [args...]``: run a script
unchanged, and when its backward fails on a freed (or modified) graph, name the variables that
carry the old graph in, the line where each enters, the pattern, its fix, the book's page about
it, and the fix as an edit of the program's own lines, each edit run in a sandbox before it is
called the fix (see :mod:`autograd_lens.run.verify`; ``--no-verify``: not run).

What the command does, and in what order, is :mod:`autograd_lens.text.command`'s; this module
only starts it.
"""

import sys

from .text.command import main

if __name__ == "__main__":
    sys.exit(main())
