"""One setup cell in every notebook, and one repository address, both from their one source."""

import re

import nbformat
import pytest
import yaml

import setup_cell
from nbtools import ROOT, notebook_paths, project_urls

NOTEBOOKS = notebook_paths()
URLS = project_urls()
REPOSITORY = URLS["Repository"]
# Every copy of the address names the repository; text files that may hold one.
NAME = REPOSITORY.rstrip("/").rsplit("/", 1)[1]
URL = re.compile(r"https?://[^\s\"'<>()\[\]`\\]+")
SKIP_DIRS = {".git", ".venv", "_build", "student", "__pycache__", ".pytest_cache", "node_modules"}
TEXT = {".md", ".yml", ".yaml", ".py", ".ipynb", ".txt", ".cfg", ".sh", ".html", ".js", ".css"}


def _first_code_cell(nb):
    return next(c for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_first_code_cell_is_the_setup_cell(path):
    nb = nbformat.read(path, as_version=4)
    cell = _first_code_cell(nb)
    assert cell.source == setup_cell.setup_source(), "run: python scripts/setup_cell.py"
    assert cell.metadata.get("tags") == [setup_cell.TAG]


def test_the_setup_cell_installs_from_the_repository_in_pyproject():
    install = [l.strip() for l in setup_cell.setup_source().splitlines() if "%pip" in l]
    # The quizzes' jupyterquiz, at the pin of requirements.txt.
    quiz = next(l.strip() for l in (ROOT / "requirements.txt").read_text().splitlines()
                if l.startswith("jupyterquiz=="))
    assert install == [f'%pip install -q "autograd_lens @ git+{REPOSITORY}" {quiz}']


def test_writing_folds_import_cells_and_a_second_run_changes_nothing():
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    first = nb.cells.index(_first_code_cell(nb))
    nb.cells[first].source = "import torch"
    nb.cells.insert(first + 1, nbformat.v4.new_code_cell("# more\nimport copy\n%matplotlib inline"))
    count = len(nb.cells)
    assert setup_cell.write_setup_cell(nb)
    assert len(nb.cells) == count - 1
    assert _first_code_cell(nb).source == setup_cell.setup_source()
    assert not setup_cell.write_setup_cell(nb)


def test_config_repository_url_is_pyprojects():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"]["url"] == REPOSITORY, "run: python scripts/setup_cell.py"


def test_config_url_is_found_by_the_yaml_parser():
    text = "# a comment\nrepository:\n  url: https://example.org/x  # kept\n  branch: main\n"
    start, end, value = setup_cell.config_url_span(text)
    assert (text[start:end], value) == ("https://example.org/x", "https://example.org/x")


def _project_text_files():
    for path in ROOT.rglob("*"):
        if SKIP_DIRS & set(path.relative_to(ROOT).parts) or not path.is_file():
            continue
        if path.suffix in TEXT or path.name in {"postBuild", "Makefile"}:
            yield path


def colab_base(repository: str) -> str:
    """Colab's address for notebooks of the repository (``.../github/<owner>/<name>/``)."""
    return "https://colab.research.google.com/github/" + repository.split("github.com/", 1)[1].rstrip("/") + "/"


def binder_base(repository: str) -> str:
    """Binder's address for the repository (``.../v2/gh/<owner>/<name>/``)."""
    return "https://mybinder.org/v2/gh/" + repository.split("github.com/", 1)[1].rstrip("/") + "/"


def test_every_copy_of_the_address_agrees_with_pyproject():
    # The student copies' "open in Colab" and "open in Binder" links are derived from the
    # repository address too.
    bases = tuple(URLS.values()) + (colab_base(REPOSITORY), binder_base(REPOSITORY))
    wrong = sorted({f"{path.relative_to(ROOT)}: {url}"
                    for path in _project_text_files()
                    for url in URL.findall(path.read_text(errors="replace"))
                    if NAME in url and not url.startswith(bases)})
    assert wrong == []
