"""A loop writes each row's result back into the tensor it read the row from, through a helper:
the product that saved the row was made inside the helper, called from the write's line. The
replay records that call chain, so the part read on that line is copied (a copy of the whole
tensor before the write, the edit for a node built elsewhere, still leaves the row it reads a
view of what it writes). Run, it trains as the program written by hand with rows computed
anew."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_part_read_by_a_helper.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("part_read"))[NAME]


def test_the_write_is_named_and_the_part_read_is_copied(run):
    report = run["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("h", marked(NAME, "write")), run["text"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "write"), [
        "            h[i] = mix(h[i].clone(), self.weight)  # write"])], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    inp, weight = nn.Linear(3, 4), nn.Parameter(torch.randn(4, 4) * 0.3)
    opt = torch.optim.SGD([*inp.parameters(), weight], lr=0.1)
    for _ in range(3):
        h = inp(torch.randn(5, 3))
        rows = torch.stack([torch.tanh(h[i] @ weight) for i in range(h.size(0))])
        opt.zero_grad()
        rows.pow(2).sum().backward()
        opt.step()
    return {"model.inp.weight": inp.weight, "model.weight": weight}


def test_the_copied_part_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
