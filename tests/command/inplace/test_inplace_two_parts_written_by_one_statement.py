"""One statement that writes parts of two tensors from those parts
(``a[:, 1:], b[:, 1:] = mix(a[:, 1:], b[:, 1:])``): the edit copies what it reads of both, not
only of the tensor named first (the other write would still change what the product saved), and
trains as the program written so by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_two_parts_written_by_one_statement.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("parts"))[NAME]


def _by_hand() -> dict:
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 8)
    optimizer = torch.optim.SGD(lin.parameters(), lr=0.05)
    for _ in range(3):
        x, y = torch.randn(16, 3), torch.randn(16, 1)
        h = lin(x)
        a, b = h[:, :4], h[:, 4:]
        u, w = a[:, 1:], b[:, 1:]
        a = torch.cat([a[:, :1], u * w], 1)
        b = torch.cat([b[:, :1], u - w], 1)
        loss = ((a * b).sum(1, keepdim=True) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.lin.weight": lin.weight, "model.lin.bias": lin.bias}


def test_the_edit_copies_both_parts_read_and_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    edit = run["report"]["edits"][0]
    assert edit["line"] == marked(NAME, "write") and \
        "mix(a[:, 1:].clone(), b[:, 1:].clone())" in edit["new"][0], edit
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
