"""The stored notebooks must be trustworthy before nbval and the book use them."""

import nbformat
import pytest

from nbtools import (CHAPTERS, SMALL_NUMBER_TAG, code_digest, notebook_paths, round_off_numbers,
                     stored_problems, toc_files)
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


def _cell_printing(text, tags=()):
    cell = nbformat.v4.new_code_cell("print(...)", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    cell.metadata["tags"] = list(tags)
    return cell


def test_round_off_in_a_stored_output_is_caught():
    # The output notebook 06 stored on a machine with AVX-512: other processors print other digits.
    printed = "mean loss / k off by 0.0303; weighted by share off by 3.0e-08; not divided, off by 9.5e-07.\n"
    assert round_off_numbers(_cell_printing(printed)) == ["3.0e-08", "9.5e-07"]
    assert round_off_numbers(_cell_printing("tensor([1.2e-05, -4e-09])\n")) == ["1.2e-05", "-4e-09"]
    assert round_off_numbers(_cell_printing(printed, tags=[SMALL_NUMBER_TAG])) == []
    # What is not round-off: fixed notation, large numbers, zero.
    assert round_off_numbers(_cell_printing("lr 1e-3, gap 2.5e-02, 0.000001, 0e-00\n")) == []


def test_a_traceback_may_show_small_numbers_but_its_message_may_not():
    cell = nbformat.v4.new_code_cell("raise", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="gap 3.1e-07",
                                           traceback=["    eps: float = 1e-08,"])]
    assert round_off_numbers(cell) == ["3.1e-07"]


def test_a_notebook_printing_round_off_is_refused(tmp_path):
    source = NOTEBOOK_DIR / "06_accumulating_loss.ipynb"
    nb = nbformat.read(source, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "weighted by share" in c.source)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="weighted by share off by 3.0e-08\n")]
    edited = tmp_path / source.name
    nbformat.write(nb, edited)
    assert any("prints 3.0e-08" in p and "round-off" in p for p in stored_problems(edited))
