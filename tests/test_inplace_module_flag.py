"""The in-place error where a module's in-place mode was turned on after the module was made
(``layer.inplace = True`` in a loop over the layers): no call passes ``inplace=True``, so the
edit turns that flag off where it is set, and the program trains as the one written without it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import command_reports, marked, trains_as

NAME = "inplace_flags_turned_on_after_building.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("flag"))[NAME]


def test_the_writer_is_the_dropout_run_at_its_line(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("self.body[2]", marked(NAME, "write")), first


def by_hand() -> dict:
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Dropout(0.25), nn.Linear(12, 3))
    opt = torch.optim.SGD(body.parameters(), lr=0.1)
    for _ in range(2):
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        loss = nn.functional.cross_entropy(body(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.body.0.weight": body[0].weight, "model.body.3.weight": body[3].weight}


def test_the_edit_turns_the_flag_off_and_trains_as_by_hand(run, tmp_path):
    edits = run["report"]["edits"]
    assert [(e["line"], e["new"][0].strip()) for e in edits] == \
        [(marked(NAME, "flag"), "layer.inplace = False  # flag")], edits
    trains_as(NAME, run["report"], by_hand(), tmp_path)
