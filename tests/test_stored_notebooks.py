"""The stored notebooks must be trustworthy before nbval and the book use them."""

import nbformat
import pytest

from nbtools import CHAPTERS, code_digest, notebook_paths, stored_problems, toc_files
from nbtools import NOTEBOOKS as NOTEBOOK_DIR

# Every notebook on disk, listed in the table of contents or not.
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb")) + sorted(CHAPTERS.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_stored_outputs_are_trustworthy(path):
    assert stored_problems(path) == []


def test_every_notebook_is_in_the_table_of_contents():
    assert sorted(notebook_paths()) == sorted(NOTEBOOKS)


def test_table_of_contents_order_goes_through_parts_chapters_and_sections():
    toc = {"root": "intro", "parts": [
        {"caption": "A", "chapters": [{"file": "a"}, {"file": "b", "sections": [{"file": "b1"}]}]},
        {"caption": "B", "chapters": [{"file": "c", "title": "C"}]}]}
    assert toc_files(toc) == ["a", "b", "b1", "c"]
    assert notebook_paths(reverse=True) == notebook_paths()[::-1]


def test_editing_code_without_refreshing_is_caught(tmp_path):
    source = NOTEBOOKS[0]
    nb = nbformat.read(source, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "torch.manual_seed" in c.source)
    cell.source = cell.source.replace("torch.manual_seed(0)", "torch.manual_seed(1)")
    edited = tmp_path / source.name
    nbformat.write(nb, edited)
    assert any("code changed" in p for p in stored_problems(edited))


def test_untagged_error_and_tag_without_error_are_caught(tmp_path):
    source = NOTEBOOKS[0]
    nb = nbformat.read(source, as_version=4)
    tagged = [c for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])]
    assert tagged, "the first notebook reproduces the error in a tagged cell"
    tagged[0].metadata["tags"].remove("raises-exception")
    plain = next(c for c in nb.cells if c.cell_type == "code" and not c.outputs)
    plain.metadata.setdefault("tags", []).append("raises-exception")
    nb.metadata["autograd_book"]["code_sha256"] = code_digest(nb)
    edited = tmp_path / source.name
    nbformat.write(nb, edited)
    problems = stored_problems(edited)
    assert any("not tagged raises-exception" in p for p in problems)
    assert any("stored no error" in p for p in problems)
