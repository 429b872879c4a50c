"""An in-place method applied to a result that no name holds (``self.lsm(z).add_(prior)``, its
value then copied into a slice of a named table): the replay records the method's own write
(``add_``) and no name of the program holding what it wrote, so the write is named by that
expression, not by the table the statement assigns into, the page is the one on a tensor the
program writes in place (not a module's state: ``self.lsm(...)`` is no attribute), and the edit
is the method's out-of-place twin. Run, it trains as the program written with ``.add``."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_method_on_an_unnamed_result.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("unnamed"))[NAME]


def test_the_write_is_named_by_the_expression_it_wrote(run):
    report = run["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("self.lsm(block(x))", marked(NAME, "write")), \
        run["text"]
    assert report["page"].endswith("mental_model.html"), run["text"]
    assert "saved `table`" not in run["text"], run["text"]


def test_the_method_runs_out_of_place(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "write"), [
        "            table[:, start:start + width] = self.lsm(block(x)).add(prior)  # write"])], \
        run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    blocks = nn.ModuleList([nn.Linear(4, 3), nn.Linear(4, 5)])
    opt = torch.optim.SGD(blocks.parameters(), lr=0.1)
    for _ in range(3):
        x, target = torch.randn(6, 4), torch.randint(0, 8, (6,))
        table = torch.cat([torch.log_softmax(b(x), dim=1) + 0.5 for b in blocks], dim=1)
        opt.zero_grad()
        (-table.gather(1, target[:, None]).mean()).backward()
        opt.step()
    return {"model.blocks.0.weight": blocks[0].weight, "model.blocks.1.weight": blocks[1].weight}


def test_the_out_of_place_method_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
