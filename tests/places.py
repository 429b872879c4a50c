"""The repository's folders, as every test file reads them, wherever it sits below ``tests/``.

The tests are in folders that mirror the library's (``tests/lens/``, ``tests/command/run/``, ...);
the programs they run (``tests/scripts/``), the proof programs (``tests/proofs/``) and the shared
helpers stay at the top of ``tests/``.
"""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPOSITORY = TESTS.parent
