"""The library's layout: folders by stage, each importing only from the folders before it.

The order is the one the README's layout and the design give. Every import is read from the source
(``ast``), those inside functions too, so that a deferred import cannot hide a way back up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from places import REPOSITORY

PACKAGE = REPOSITORY / "autograd_lens"
STAGES = ("lens", "source", "fixes", "predict", "explain", "run", "text")
TOP = {"__init__.py", "__main__.py"}  # on top of every folder


def imported(path: Path) -> set[str]:
    """The modules of the package that ``path`` imports, as dotted paths inside the package."""
    return imports_in(path.read_text(), path.relative_to(PACKAGE).parent.parts)


def imports_in(text: str, here: tuple[str, ...]) -> set[str]:
    """The modules of the package that a module's ``text`` imports, where ``here`` is its folder
    inside the package."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(here[:len(here) - node.level + 1]) + (node.module or "").split(".")
            base = [part for part in base if part]
            found.add(".".join(base) if node.module else ".".join(base + [node.names[0].name]))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograd_lens."):
            found.add(node.module.removeprefix("autograd_lens."))
    return found


def folder_of(dotted: str) -> str | None:
    """The stage folder of a module's dotted path inside the package (None: the package's top)."""
    first = dotted.split(".")[0]
    return first if first in STAGES else None


def test_the_package_is_folders_and_two_modules_on_top():
    loose = {p.name for p in PACKAGE.glob("*.py")}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert loose == TOP and folders == set(STAGES), (loose, folders)


@pytest.mark.parametrize("stage", STAGES)
def test_a_folder_imports_only_from_itself_and_the_folders_before_it(stage):
    allowed = set(STAGES[:STAGES.index(stage) + 1])
    wrong = {f"{path.name} imports {target}"
             for path in (PACKAGE / stage).glob("*.py") for target in imported(path)
             if folder_of(target) not in allowed}
    assert not wrong, sorted(wrong)


def test_a_deferred_import_of_a_later_folder_is_found():
    """The check itself: an import inside a function, of a later folder's module, is read."""
    text = "def f():\n    from ..run.watch import Watch\n    from . import graph\n"
    assert imports_in(text, ("lens",)) == {"run.watch", "lens.graph"}
    assert folder_of("run.watch") not in STAGES[:1]


def test_every_stage_knows_the_package_as_one_folder():
    """The folders the package tells its own frames by (a traceback's, a replay's, a frame the
    user's code is told from) are the package's own, whichever stage folder holds the module
    that asks; and the folder it is imported from is the package's parent."""
    from autograd_lens.lens import history
    from autograd_lens.run import sites, unseen
    from autograd_lens.source import candidates
    from autograd_lens.text import spawned

    root = str(PACKAGE) + "/"
    assert unseen.PACKAGE == sites._OURS == history.LIBRARY_DIRS[1] == root
    assert root in candidates.NOT_USERS and spawned._PACKAGE_PARENT == str(PACKAGE.parent)
    inner = str(PACKAGE / "explain" / "situation.py")
    assert not sites.is_users(inner) and inner.startswith(candidates.NOT_USERS)
