"""The tests that CI's torch matrix runs (`make test-torch`, TORCH_TESTS in the Makefile) run in an
environment that holds only torch, the package with its dependencies, and the test tools that
scripts/test-torch.sh installs. A test module (or a helper it imports) that needs anything else
fails to import there, on every release: checked here, in `make test`, before CI meets it."""

from __future__ import annotations

import ast
import re
import shlex
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from places import REPOSITORY

ROOT = REPOSITORY
TESTS = ROOT / "tests"
MODULE_OF = {"pytest-xdist": "xdist"}   # distributions whose module has another name


def torch_tests() -> list[Path]:
    """TORCH_TESTS, read from the Makefile (its lines joined where they end in a backslash)."""
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    words = re.search(r"^TORCH_TESTS\s*:=(.*)$", makefile, re.MULTILINE).group(1).split()
    return [ROOT / word for word in words]


def installed_there() -> set[str]:
    """The modules the matrix's environment has besides the standard library: the package, its
    dependencies (pyproject.toml) and what scripts/test-torch.sh installs beside it."""
    line = next(line for line in (ROOT / "scripts" / "test-torch.sh").read_text().splitlines()
                if re.search(r"-m pip install .* \. ", line))
    words = shlex.split(line)
    tools = [w for w in words[words.index(".") + 1:] if not w.startswith("-")]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = tools + [Requirement(r).name for r in project["dependencies"]]
    return {MODULE_OF.get(n, n).replace("-", "_") for n in names} | {project["name"]}


def top_level_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_torch_matrix_tests_import_only_what_its_environment_has():
    available = installed_there() | set(sys.stdlib_module_names) | {"__future__"}
    assert {"torch", "pytest", "xdist", "playwright", "autograd_lens"} <= available
    # The checkout's own modules the tests can import: tests/ and scripts/ (conftest.py puts it
    # on sys.path); each is followed into its own imports.
    helpers = {p.stem: p for folder in (ROOT / "scripts", TESTS) for p in folder.glob("*.py")}
    queue, seen, missing = [TESTS / "conftest.py", *torch_tests()], set(), {}
    assert all(p.is_file() for p in queue), queue
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in top_level_imports(path):
            if name in helpers:
                queue.append(helpers[name])
            elif name not in available:
                missing.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    assert not missing, f"imported by the torch matrix's tests but not installed there: {missing}"
