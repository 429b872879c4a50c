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


def pytest_configure(config):
    # pytest-xdist registers this mark; without xdist (`-p no:xdist`) it is declared here.
    config.addinivalue_line("markers", "xdist_group(name): run these tests on one xdist worker")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`--dist loadgroup`), the tests of a module that share a module-scoped
    fixture run on one worker, so that the fixture (the command's processes, the wheel build) is
    computed once, not once on each worker that happens to get one of those tests."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        module = getattr(item, "module", None)
        if info is None or module is None:
            continue
        shared = [d for defs in info.name2fixturedefs.values() for d in defs if d.scope == "module"]
        if shared:
            item.add_marker(pytest.mark.xdist_group(module.__name__))


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    torch.manual_seed(0)
