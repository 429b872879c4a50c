"""A recurrent state kept on the module, stored back by unpacking (``out, self.hidden =
self.gru(x, self.hidden)``) and first made in ``__init__`` by a method of the module: the
unpacked store counts as a store outside ``__init__``, so the state is not taken for a value
computed once from the module's parts (whose detach would stop training what computes it),
and the edit detaches it where it is read; the fix trains as the program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_state_unpacked_into_an_attribute.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("unpacked_state"))[NAME]


def test_the_state_is_detached_where_it_is_read(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][0]) for e in report["edits"]] == [
        (marked(NAME, "enters"), "        self.hidden = self.hidden.detach()")]


def by_hand() -> dict:
    torch.manual_seed(0)
    gru, head = nn.GRU(5, 6, batch_first=True), nn.Linear(6, 1)
    optimizer = torch.optim.SGD([*gru.parameters(), *head.parameters()], lr=0.1)
    hidden = torch.zeros(1, 4, 6)
    for _ in range(3):
        x, y = torch.randn(4, 7, 5), torch.randn(4)
        out, hidden = gru(x, hidden.detach())
        loss = ((head(out[:, -1]).squeeze(1) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.gru.weight_hh_l0": gru.weight_hh_l0, "model.head.weight": head.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
