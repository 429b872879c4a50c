import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

# Folders that tools write to on purpose; everything else in the repository must be left alone
# by a test run (notebooks included: they may write only to temporary directories).
_WRITABLE = {".git", ".venv", "_build", "student", "__pycache__", ".pytest_cache",
             ".ipynb_checkpoints", ".jupyter_cache"}


def _tree_state() -> dict[str, tuple[int, int]]:
    state = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _WRITABLE and not d.endswith(".egg-info")]
        for name in files:
            path = os.path.join(folder, name)
            st = os.stat(path)
            state[os.path.relpath(path, ROOT)] = (st.st_mtime_ns, st.st_size)
    return state


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller, not an xdist worker
        session.config._tree_before = _tree_state()


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_tree_before", None)
    if before is None:
        return
    after = _tree_state()
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = ("the test run wrote into the repository (tests and notebooks may write only "
                   "to temporary directories): " + ", ".join(changed[:10]))
        if reporter:
            reporter.write_line("ERROR: " + message, red=True)
        session.exitstatus = 1


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    torch.manual_seed(0)
