"""The set-up stops at once, with a message that says how to install a missing system program."""

import shutil
import subprocess
import tomllib
from pathlib import Path

import yaml
from places import REPOSITORY

ROOT = REPOSITORY
ENSURE = ROOT / "scripts" / "ensure-tool.sh"


def _bare_path(tmp_path: Path) -> str:
    """A PATH with only what the script itself needs: no apt-get, no sudo, no brew, no dot."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "id", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return str(bin_dir)


def test_missing_dot_without_any_installer_stops_with_instructions(tmp_path):
    result = subprocess.run(
        [shutil.which("bash"), str(ENSURE), "dot", "graphviz", "graphviz", "graphviz", "Graphviz"],
        env={"PATH": _bare_path(tmp_path), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 1
    message = result.stderr
    assert "'dot' (Graphviz) is not installed" in message
    assert "sudo apt-get install graphviz" in message
    assert "brew install graphviz" in message
    assert "conda install -c conda-forge graphviz" in message
    assert "Traceback" not in message


def test_present_tool_is_accepted_silently(tmp_path):
    path = _bare_path(tmp_path)
    result = subprocess.run(
        [shutil.which("bash"), str(ENSURE), "cat", "coreutils", "-", "-", "cat"],
        env={"PATH": path, "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0
    assert result.stderr == ""


def test_ci_runs_make_test_on_the_oldest_supported_python_and_checks_the_newer_ones():
    job = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())["jobs"]["test"]
    with open(ROOT / "pyproject.toml", "rb") as f:
        oldest = tomllib.load(f)["project"]["requires-python"].removeprefix(">=")
    versions = job["strategy"]["matrix"]["python"]
    assert min(versions, key=lambda v: tuple(map(int, v.split(".")))) == oldest
    runs = {step.get("run"): step.get("if") for step in job["steps"]}
    # CI's one entry point is .ci/run (the README's test command, run on a fresh clone).
    assert runs["bash .ci/run"] == f"matrix.python == '{oldest}'"
    entry = (ROOT / ".ci" / "run").read_text().split()
    assert entry[-2:] == ["make", "test"]
    install = next(step for step in job["steps"] if step.get("name") == "Install check")
    assert install["if"] == f"matrix.python != '{oldest}'"
