"""The sandbox's folder (see :mod:`autograd_lens.run.sandbox` for what a run in it may touch):
made, copied, and removed when no command owns it any more; and the start of the re-run's
process, which copies it.

The command makes one temporary folder (``autograd_lens_verify_<pid>_...`` under the system's
temporary folder). The re-run's process copies the program's folder into it once
(:func:`snapshot`, done while the first run goes on): Python files and other small files are
copied (their times kept), files over :data:`BIG` bytes (data sets, checkpoints) and folders that
are not the program's (``.git``, virtual environments, caches) are symbolic links to the
originals, and so is everything past :data:`BUDGET` bytes or :data:`MOST_FILES` files. So a big
data set is read where it is, not copied, and a run starts in milliseconds. Each run gets a fresh
copy of that snapshot (links stay links) as its working folder, and its own temporary folder
(``TMPDIR``, :mod:`tempfile`).

The folder is removed when the command ends; if the command is killed outright, the re-run's
process (told by the system, see :mod:`autograd_lens.run.lifetime`) removes it, and the next command
removes any folder left by a command that no longer runs (:func:`sweep`). The re-run's process
starts from this file alone (:func:`boot`, before torch and the rest of the package): it imports
nothing of the package's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from typing import Any

PREFIX = "autograd_lens_verify_"
BIG = 1 << 20  # a file larger than this is linked, not copied
BUDGET = 64 << 20  # at most this many bytes copied in all
MOST_FILES = 5000  # at most this many files copied
# Folders that are not the program's own: linked, never walked.
NOT_COPIED = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv",
                        ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                        ".ipynb_checkpoints", "site-packages"})


def make_folder() -> str:
    """A new temporary folder for this command's re-runs (after a :func:`sweep`)."""
    sweep()
    return tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}_")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(folder: str | None = None) -> list[str]:
    """Remove the re-run folders left in ``folder`` (the temporary folder) by commands that no
    longer run (their process id is in the name); returns those removed."""
    folder = folder or tempfile.gettempdir()
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            owner = entry.name[len(PREFIX):].split("_", 1)[0]
            if owner.isdigit() and not _alive(int(owner)) and entry.stat().st_uid == os.getuid():
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.path)
    return removed


def root_of(module: str | None, target: list[str], cwd: str) -> str:
    """The folder copied for the re-runs: the working folder when the script lies inside it (or
    for ``-m``), else the script's own folder."""
    if module is not None or not target:
        return cwd
    script = os.path.realpath(os.path.join(cwd, target[0]))
    if os.path.isdir(script):
        script = os.path.join(script, "__main__.py")
    folder = os.path.dirname(script)
    return cwd if inside(folder, cwd) else folder


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def snapshot(root: str, into: str) -> None:
    """Copy ``root`` into the new folder ``into``: small files copied, big ones and folders that
    are not the program's linked (see the module's docstring)."""
    budget = [BUDGET, MOST_FILES]
    os.makedirs(into)

    def walk(source: str, target: str) -> None:
        try:
            entries = sorted(os.scandir(source), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            there = os.path.join(target, entry.name)
            try:
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), there)
                elif entry.is_dir():
                    if entry.name in NOT_COPIED or budget[1] <= 0:
                        os.symlink(entry.path, there)
                    else:
                        os.mkdir(there)
                        walk(entry.path, there)
                elif entry.is_file():
                    size = entry.stat().st_size
                    if size > BIG or size > budget[0] or budget[1] <= 0:
                        os.symlink(entry.path, there)
                    else:
                        shutil.copy2(entry.path, there)
                        budget[0] -= size
                        budget[1] -= 1
            except OSError:
                continue

    walk(root, into)


def fresh(snapshot_folder: str, run_folder: str) -> None:
    """A new run's folder: a copy of the snapshot (its links stay links)."""
    shutil.copytree(snapshot_folder, run_folder, symlinks=True)


COPIED = "copied\n"  # what the re-run's process says once the folder is copied


def boot(setup_text: str, package: str) -> None:
    """The start of the re-run's process, loaded from this file alone (before torch): be told
    when the command ends (then remove the folder and end all), copy the program's folder, say
    so, then import the rest (torch with it) and serve the runs."""
    import ctypes
    import json
    import signal

    setup = json.loads(setup_text)

    def leave(signum: int, frame: Any) -> None:
        shutil.rmtree(setup["folder"], ignore_errors=True)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    signal.signal(signal.SIGTERM, leave)
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != setup["parent"]:  # the command ended before the call above
        leave(signal.SIGTERM, None)
    snapshot(setup["root"], os.path.join(setup["folder"], "snapshot"))
    sys.stderr.write(COPIED)
    sys.stderr.flush()
    sys.path.insert(0, package)  # for this import only: then sys.path is as python -c made it
    from autograd_lens.run.rerun_process import _serve
    sys.path.pop(0)
    _serve(setup)
