"""A torch layer made with its in-place flag given by position (``nn.ELU(1.0, True)``, at the
place torch's signature gives ``inplace``): the edit makes that argument ``False`` where the layer
is made, and trains as the program written so by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_flag_given_by_position.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("position"))[NAME]


def _by_hand() -> dict:
    torch.manual_seed(0)
    stem, gate = nn.Linear(3, 4), nn.Parameter(torch.ones(1, 4))
    body, head = nn.Sequential(nn.ELU(1.0), nn.Linear(4, 4)), nn.Linear(8, 1)
    optimizer = torch.optim.SGD([*stem.parameters(), gate, *body.parameters(),
                                 *head.parameters()], lr=0.1)
    for _ in range(3):
        x, y = torch.randn(16, 3), torch.randn(16, 1)
        h = stem(x)
        loss = (head(torch.cat([h * gate, body(h)], 1)) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.0.weight": stem.weight, "model.1.gate": gate,
            "model.1.body.1.weight": body[1].weight,
            "model.2.weight": head.weight}


def test_the_edit_turns_the_positional_flag_off_and_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    edit = run["report"]["edits"][0]
    assert edit["line"] == marked(NAME, "made") and "nn.ELU(1.0, False)" in edit["new"][0], edit
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
