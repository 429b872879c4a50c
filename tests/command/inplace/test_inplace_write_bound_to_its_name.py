"""An in-place method whose result is bound back to the name it writes (``d = d.div_(...)``):
the edit calls the out-of-place twin on the same line (``d = d.div(...)``), not a copy made
before the line (the copy would be the tensor the norm reads and saves, and the division would
still change it), and trains as the program written so by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_write_bound_to_its_name.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("bound"))[NAME]


def _by_hand() -> dict:
    torch.manual_seed(0)
    encoder, head = torch.nn.Linear(5, 3), torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 5), torch.randn(8, 1)
        d = torch.tanh(encoder(x))
        d = d.div(d.norm(dim=-1, keepdim=True) + 1e-6)
        loss = (head(d) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"encoder.weight": encoder.weight, "head.weight": head.weight}


def test_the_write_is_named_at_its_line(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("d", marked(NAME, "write")), run["text"]


def test_the_edit_calls_the_twin_on_the_same_line_and_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    edit = run["report"]["edits"][0]
    assert edit["line"] == marked(NAME, "write") and \
        edit["new"] == ["    d = d.div(d.norm(dim=-1, keepdim=True) + 1e-6)  # write"], edit
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
