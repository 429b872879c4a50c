"""Binder's own set-up in binder/ (repo2docker reads that folder and then ignores the top level).

binder/requirements.txt must install everything the notebooks and autograd_lens import, at the
versions requirements.txt pins, with torch's CPU build.
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import nbformat
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from places import REPOSITORY

ROOT = REPOSITORY
BINDER = ROOT / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def pins(path: Path) -> dict[str, Version]:
    """{package: pinned version} of a requirements file (options and comments skipped)."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{path.name}: {line} is not pinned"
        found[canonicalize_name(requirement.name)] = Version(specifier.version)
    return found


def notebook_imports() -> set[str]:
    """Top-level modules imported by the code cells of the notebooks and executed chapters."""
    modules = set()
    for path in sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("chapters/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                modules |= set(re.findall(r"^\s*(?:import|from)\s+(\w+)", cell.source, re.MULTILINE))
    return modules


def test_binder_pins_follow_requirements_and_take_the_cpu_torch():
    binder, book = pins(BINDER / "requirements.txt"), pins(ROOT / "requirements.txt")
    assert f"--extra-index-url {CPU_INDEX}" in (BINDER / "requirements.txt").read_text()
    assert binder["torch"].local == "cpu", binder["torch"]
    for name, version in binder.items():
        assert name in book, f"binder/requirements.txt pins {name}, which requirements.txt does not"
        assert version.public == book[name].public, f"{name}: Binder {version}, requirements.txt {book[name]}"


def test_binder_installs_what_the_notebooks_and_the_library_import():
    binder = pins(BINDER / "requirements.txt")
    modules = notebook_imports() - set(sys.stdlib_module_names) - {"autograd_lens"}
    assert {"torch", "torchviz", "matplotlib"} <= modules, modules
    distributions = packages_distributions()
    needed = {canonicalize_name(d) for m in modules for d in distributions[m]}
    library = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    needed |= {canonicalize_name(Requirement(r).name) for r in library}
    assert needed - binder.keys() == set(), f"Binder would miss {sorted(needed - binder.keys())}"


def test_binder_runs_python_the_library_supports_and_installs_it():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    supported = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert re.fullmatch(r"python-3\.\d+", runtime), runtime
    assert Version(runtime.removeprefix("python-")) in Requirement(f"python{supported}").specifier
    assert "graphviz" in (BINDER / "apt.txt").read_text().split()
    assert "pip install --no-deps --no-build-isolation -e ." in (BINDER / "postBuild").read_text()


def test_binder_and_make_lab_render_the_books_myst():
    """JupyterLab in Binder and in `make lab` has the MyST renderer (tests/book/test_lab.py reads every
    notebook in the latter), at one version."""
    binder, book = pins(BINDER / "requirements.txt"), pins(ROOT / "requirements.txt")
    for name in ("jupyterlab", "jupyterlab-myst"):
        assert name in book and binder.get(name) == book[name], name
    assert "python scripts/student.py" in (BINDER / "postBuild").read_text(), "Binder writes no student copies"

