"""An in-place module run on an alias (``identity = x``, then ``identity = self.act(identity)``):
the recording lists both names for the written tensor; the write is named as its statement
names it (``identity``), and the module's flag turned off is an edit run before it is printed,
training as the unit written by hand out of place."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_module_writes_an_alias.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("alias"))[NAME]


def test_the_write_is_named_as_its_statement_names_it(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("identity", marked(NAME, "write")), run["text"]
    assert {"x", "identity"} <= set(run["report"]["recorded"]["write"]["names"])


def by_hand() -> dict:
    torch.manual_seed(0)
    fc, out = nn.Linear(4, 4), nn.Linear(4, 4)
    optimizer = torch.optim.SGD([*fc.parameters(), *out.parameters()], lr=0.1)
    for _ in range(3):
        x = torch.relu(fc(torch.randn(5, 4)))
        loss = (out(x) + torch.relu(x)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.0.fc.weight": fc.weight, "model.1.out.weight": out.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"][-1500:]
    trains_as(NAME, run["report"], by_hand(), tmp_path)
