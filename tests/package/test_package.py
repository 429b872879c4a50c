"""autograd_lens as a package: built with the standard front end, installed and used away from the repository.

The sdist and the wheel are built with `python -m build` (the wheel from the unpacked sdist, so a
file missing from the sdist fails here) and pass `twine check --strict`. The wheel is installed
into a bare virtual environment in a temporary directory (no system site-packages, no pip, no
repository on its path), where a small script diagnoses a real freed-graph error.

That environment gets the dependencies (torch, torchviz, graphviz) without downloading anything:
a `.pth` file puts this environment's site-packages at the END of its path, after its own. That
folder provides autograd_lens only through an editable-install hook, which Python runs solely for
`.pth` files of a site directory, never for a folder that a `.pth` line adds; the test proves
that autograd_lens cannot be imported there before the wheel is installed, and that it is
imported from the wheel after. (Installing torch from a wheel instead would copy about 1 GB
per run.)

Everything runs offline: `--no-isolation` builds with the pinned setuptools of this environment,
and pip installs the one wheel with `--no-index --no-deps`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from built_package import build
from places import REPOSITORY

ROOT = REPOSITORY

# A hidden state carried from one step into the next without detach(): the freed-graph error.
SCRIPT = """
import torch
import autograd_lens as al

torch.manual_seed(0)
w = torch.randn(4, 4, requires_grad=True)
h = torch.tanh(torch.zeros(1, 4) @ w)   # step 1
h.sum().backward()                      # frees step 1's saved tensors
loss = torch.tanh(h @ w).sum()          # step 2, still attached to step 1's graph

report = al.diagnose(loss, suspects={"h": h})
assert not report.ok, report
assert "freed" in {slot.state for slot in al.saved_tensors(loss)}
try:
    loss.backward()
except RuntimeError as error:
    assert al.is_freed_graph_error(error), error
else:
    raise AssertionError("backward through step 1's freed graph did not fail")

fixed = torch.tanh(h.detach() @ w).sum()
assert al.diagnose(fixed).ok
fixed.backward()

from importlib.metadata import version
assert version("autograd_lens") == al.__version__, (version("autograd_lens"), al.__version__)
print(al.__file__)
"""


def run(*command, cwd: Path) -> subprocess.CompletedProcess:
    """Run a command in `cwd` (outside the repository), with nothing of ours on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def must(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"{result.args}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built from a copy of the package's sources."""
    return build(tmp_path_factory.mktemp("package"), run)


@pytest.fixture(scope="module")
def bare(dist, tmp_path_factory) -> Path:
    """A bare virtual environment outside the repository with the wheel installed; its python."""
    home = tmp_path_factory.mktemp("bare")
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(home / "venv")
    python = home / "venv" / "bin" / "python"
    site_packages = Path(must(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                                  cwd=home)).strip())
    (site_packages / "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    absent = run(python, "-c", "import autograd_lens", cwd=home)
    assert absent.returncode != 0 and "No module named 'autograd_lens'" in absent.stderr, (
        "autograd_lens is importable in the bare environment before the wheel is installed:\n"
        + absent.stdout + absent.stderr)

    wheels = sorted(dist.glob("*.whl"))
    must(run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-index",
             "--no-deps", *wheels, cwd=home))
    return python


def test_sdist_and_wheel_pass_twine_check(dist):
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == len(sdists) == 1 and len(list(dist.iterdir())) == 2, list(dist.iterdir())
    version = sdists[0].name.removeprefix("autograd_lens-").removesuffix(".tar.gz")
    assert wheels[0].name == f"autograd_lens-{version}-py3-none-any.whl", wheels
    must(run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()), cwd=dist))


def test_installed_wheel_diagnoses_a_freed_graph(bare):
    environment, home = bare.parents[1], bare.parents[2]
    out = must(run(bare, "-c", SCRIPT, cwd=home))
    installed_at = Path(out.strip().splitlines()[-1])
    assert installed_at.is_relative_to(environment), f"imported from {installed_at}, not the wheel"
    # The wheel's dependencies are declared, and this environment satisfies them.
    must(run(sys.executable, "-m", "pip", "--python", bare, "check", cwd=home))


def test_installed_wheel_command_line(bare):
    """`python -m autograd_lens --help` from the wheel. Runs once the command exists in the
    repository (autograd_lens/__main__.py); until then there is nothing to run."""
    if not (ROOT / "autograd_lens" / "__main__.py").exists():
        pytest.skip("autograd_lens/__main__.py does not exist yet: no command to check")
    result = run(bare, "-m", "autograd_lens", "--help", cwd=bare.parents[2])
    must(result)
    assert "autograd_lens" in result.stdout, result.stdout
