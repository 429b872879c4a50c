"""An activation whose class the program looks up by name (``getattr(nn, name)(inplace=True)``)
writes in place a tensor a linear layer saved: the edit makes the keyword ``False`` where the
class is made, and the program trains as the same network written by hand with an activation
that makes a new tensor."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_activation_class_looked_up_by_name.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("lookup"))[NAME]


def _by_hand() -> dict:
    torch.manual_seed(0)
    stem, shortcut = nn.Linear(3, 4), nn.Linear(4, 4)
    fc, head = nn.Linear(4, 4), nn.Linear(4, 1)
    params = [*stem.parameters(), *shortcut.parameters(), *fc.parameters(), *head.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.1)
    for _ in range(3):
        h = stem(torch.randn(8, 3))
        loss = head(fc(nn.functional.elu(h)) + shortcut(h)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"block.shortcut.weight": shortcut.weight, "stem.weight": stem.weight}


def test_the_keyword_is_turned_off_where_the_class_is_made(run, tmp_path):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    edit, = report["edits"]
    assert edit["line"] == marked(NAME, "made") and \
        edit["new"] == ["        self.act = getattr(nn, act_name)(inplace=False)  # made"], edit
    trains_as(NAME, report, _by_hand(), tmp_path)
