"""Installing autograd_lens never changes the torch its user already has, within the supported range.

The wheel is built from a copy of the package's sources, then pip is asked what installing it would
do (`pip install --dry-run --report`), offline (`--no-index`, the wheel's folder as the only source
of packages), with the machine's pip configuration left out (`PIP_CONFIG_FILE` set to the null
device), so only the wheel's own requirements decide:

* into this environment, which holds a real torch: pip installs autograd_lens and nothing else;
* into bare environments that each hold a stand-in torch, only its metadata (a `.dist-info`
  folder: all that pip's resolver reads of an installed package), at the lowest and the newest
  release of the supported range: nothing else either; at the releases just outside the range,
  pip finds no way to keep that torch (offline it then fails; online it would replace torch).

`make test-torch TORCH=X.Y.Z` and CI's torch matrix do the same for real: `pip install .` with an
index, into an environment holding a real torch of each minor release, and check that torch is
unchanged. This file also checks that the range is stated the same way everywhere: pyproject.toml,
CI's matrix, the README and the book's API page.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest
from built_package import build
import yaml
from packaging.requirements import Requirement
from packaging.version import Version
from places import REPOSITORY

ROOT = REPOSITORY
LOWEST, NEWEST = "2.4.0", "2.15.0"             # the range the checks prove
JUST_BELOW, JUST_ABOVE = "2.3.1", "2.16.0"


def torch_requirement() -> Requirement:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (requirement,) = [Requirement(d) for d in dependencies if Requirement(d).name == "torch"]
    return requirement


def pip_env() -> dict[str, str]:
    """This environment without any pip configuration: only the wheel's requirements decide."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def run(*command, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], cwd=cwd, env=pip_env(), capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built offline from a copy of the package's sources."""
    (found,) = build(tmp_path_factory.mktemp("wheel"), run).glob("autograd_lens-*.whl")
    return found


def dry_run(python: Path | str, wheel: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """What `pip install wheel` would do to the environment of ``python``, offline: pip's result
    and the packages it would install, as name==version."""
    report = cwd / "report.json"
    result = run(sys.executable, "-m", "pip", "--python", python, "install", "--dry-run",
                 "--quiet", "--report", report, "--no-index", "--find-links", wheel.parent,
                 wheel, cwd=cwd)
    if result.returncode != 0:
        return result, []
    installs = json.loads(report.read_text())["install"]
    return result, [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in installs]


def stand_in(home: Path, torch_version: str) -> Path:
    """A bare environment holding only the metadata of torch ``torch_version`` and of the
    wheel's other requirements (at this environment's versions); its python."""
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    packages = {"torch": torch_version}
    packages |= {name: installed_version(name) for name in ("torchviz", "graphviz", "setuptools")}
    for name, version in packages.items():
        info = Path(purelib) / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "INSTALLER").write_text("stand-in\n")
    return python


def test_wheel_into_this_environment_installs_only_itself(wheel, tmp_path):
    import torch

    result, installs = dry_run(sys.executable, wheel, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [i.split("==")[0] for i in installs] == ["autograd_lens"], installs
    assert torch_requirement().specifier.contains(Version(torch.__version__).base_version)


@pytest.mark.parametrize("torch_version", [LOWEST, NEWEST])
def test_wheel_keeps_a_supported_torch(wheel, tmp_path, torch_version):
    python = stand_in(tmp_path / "env", torch_version)
    result, installs = dry_run(python, wheel, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [i.split("==")[0] for i in installs] == ["autograd_lens"], installs


@pytest.mark.parametrize("torch_version", [JUST_BELOW, JUST_ABOVE])
def test_wheel_would_replace_a_torch_outside_the_range(wheel, tmp_path, torch_version):
    python = stand_in(tmp_path / "env", torch_version)
    result, installs = dry_run(python, wheel, tmp_path)
    assert result.returncode != 0 and installs == [], installs
    assert "torch" in result.stderr and "No matching distribution" in result.stderr, result.stderr


def test_range_is_the_same_in_pyproject_ci_readme_and_api_page():
    specifier = torch_requirement().specifier
    assert str(specifier) == "<2.16,>=2.4", specifier      # packaging sorts the two clauses
    assert specifier.contains(LOWEST) and specifier.contains(NEWEST)
    assert not specifier.contains(JUST_BELOW) and not specifier.contains(JUST_ABOVE)

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    matrix = workflow["jobs"]["torch"]["strategy"]["matrix"]["torch"]
    minors = [tuple(Version(v).release[:2]) for v in matrix]
    assert minors == [(2, minor) for minor in range(4, 16)], matrix   # one release per minor
    assert all(specifier.contains(v) for v in matrix), matrix
    pinned = re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned and pinned.group(1) in matrix, "the book's torch is one of the matrix's releases"

    for page in ("README.md", "chapters/api.md"):
        text = (ROOT / page).read_text()
        assert "torch>=2.4,<2.16" in text, f"{page} does not state the supported range"
        assert f"torch {pinned.group(1)}" in text, f"{page} does not name the book's torch"
