"""The package built the way a release builds it: sdist and wheel from a copy of its sources.

Shared by the packaging test and the test that the wheel keeps the user's torch, so the build is
written once."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What the sdist is built from: pyproject.toml and the files it names.
PACKAGE_SOURCES = ["pyproject.toml", "README.md", "LICENSE", "autograd_lens"]


def build(work: Path, run) -> Path:
    """Build the sdist and the wheel into ``work/dist`` with ``run`` (a runner of commands in a
    folder, returning a CompletedProcess); the folder of both."""
    source = work / "source"
    source.mkdir()
    for name in PACKAGE_SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    built = run(sys.executable, "-m", "build", "--no-isolation", "--outdir", work / "dist", source,
                cwd=work)
    assert built.returncode == 0, (f"{built.args}\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}")
    return work / "dist"
