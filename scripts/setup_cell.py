"""Write the book's one setup cell, and the repository address, from their one source.

    python scripts/setup_cell.py           # write; prints what changed (then `make refresh NB=...`)
    python scripts/setup_cell.py --check   # change nothing; exit 1 and say what differs

The repository address lives in ``pyproject.toml`` (``[project.urls]``). From it this script
writes the first code cell of every notebook (``SETUP``, tagged ``hide-input``: on the site it is
one click away, in Colab it installs the library when it is missing) and ``repository.url`` in
``_config.yml``. Import-only code cells right after the setup cell are folded into it (removed).
It touches nothing else, so it can run again after any merge.
"""

from __future__ import annotations

import sys

import nbformat
import yaml

from nbtools import ROOT, notebook_paths, project_urls, rewrite

TAG = "hide-input"
SETUP = """\
# Setup. In Colab the first run installs autograd_lens (and the quizzes' jupyterquiz); in the
# book's environment both are there.
try:
    import autograd_lens as al
except ImportError:
    %pip install -q "autograd_lens @ git+{repository}" jupyterquiz==2.9.6.4
    import autograd_lens as al
import copy, gc, inspect, re, time, warnings, weakref

%matplotlib inline
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
import torchviz
from torch import nn
from torch.func import functional_call, grad
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
torch.set_printoptions(precision=4)"""


def setup_source() -> str:
    return SETUP.format(repository=project_urls()["Repository"])


def _import_only(source: str) -> bool:
    """True for a cell of nothing but imports, %matplotlib, comments and blank lines."""
    lines = [l.strip() for l in source.splitlines() if l.strip() and not l.strip().startswith("#")]
    return bool(lines) and all(l.startswith(("import ", "from ", "%matplotlib")) for l in lines)


def write_setup_cell(nb: nbformat.NotebookNode) -> bool:
    """Make ``nb``'s first code cell the setup cell, fold the import cells after it; True if changed."""
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    cell, source = nb.cells[first], setup_source()
    changed = cell.source != source or cell.metadata.get("tags") != [TAG]
    cell.source, cell.metadata["tags"] = source, [TAG]
    while (first + 1 < len(nb.cells) and nb.cells[first + 1].cell_type == "code"
           and _import_only(nb.cells[first + 1].source)):
        del nb.cells[first + 1]
        changed = True
    return changed


def config_url_span(text: str) -> tuple[int, int, str]:
    """Where ``repository.url`` is in _config.yml's text (start, end offsets) and its value."""
    root = yaml.compose(text)
    repository = next(v for k, v in root.value if k.value == "repository")
    url = next(v for k, v in repository.value if k.value == "url")
    return url.start_mark.index, url.end_mark.index, url.value


def write_config_url(check: bool) -> bool:
    """Set _config.yml's repository.url to pyproject's; True if it differed. Keeps the comments."""
    path = ROOT / "_config.yml"
    text = path.read_text()
    start, end, value = config_url_span(text)
    wanted = project_urls()["Repository"]
    if value != wanted and not check:
        path.write_text(text[:start] + wanted + text[end:])
    return value != wanted


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print("usage: python scripts/setup_cell.py [--check]", file=sys.stderr)
        return 2
    differ = ["_config.yml (repository.url)"] if write_config_url(check) else []
    differ += [path.relative_to(ROOT).as_posix() for path in
               rewrite(notebook_paths(), lambda nb, path: write_setup_cell(nb), check)]
    for name in differ:
        print(("differs from its source: " if check else "wrote ") + name)
    if differ and not check:
        notebooks = " ".join(d for d in differ if d.endswith(".ipynb"))
        print(f"Now refresh the notebooks: make refresh NB=\"{notebooks}\"" if notebooks else "")
    return 1 if check and differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
