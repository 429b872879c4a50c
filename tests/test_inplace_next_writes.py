"""The in-place error where the function writes in place two tensors that nodes saved (two
running sums grown with ``+=`` and each read by a product): the replay records, beside the
write the error names, the writes of the graph's other saved tensors that the backward would
meet next (``next_writes``), and the edit that writes every one of them anew trains as the
program written out of place by hand; the edit of the first write alone is not the fix."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import SCRIPTS, command_reports, trains_as

NAME = "inplace_two_running_sums_each_saved.py"


def marked(mark: str) -> int:
    return next(n for n, line in enumerate((SCRIPTS / NAME).read_text().splitlines(), 1)
                if f"# {mark}:" in line)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("next"))[NAME]


def test_the_replay_records_the_next_write(run):
    recorded = run["report"]["recorded"]
    assert recorded["write"]["user"]["line"] == marked("write")
    assert [w["line"] for w in recorded["next_writes"]] == [marked("next write")]


def by_hand() -> dict:
    torch.manual_seed(0)
    first, second = nn.Parameter(torch.ones(4)), nn.Parameter(torch.ones(4))
    head = nn.Linear(4, 1)
    opt = torch.optim.SGD([first, second, *head.parameters()], lr=0.05)
    for _ in range(2):
        series, target = torch.randn(5, 3, 4), torch.randn(3, 1)
        total = squares = None
        outputs = []
        for x in series:
            total = (total if total is not None else torch.zeros_like(x)) + x
            squares = (squares if squares is not None else torch.zeros_like(x)) + x * x
            outputs.append(head(first * total + second * squares))
        loss = F.mse_loss(torch.stack(outputs).mean(0), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"moments.first": first, "moments.second": second, "head.weight": head.weight}


def test_the_edit_of_every_recorded_write_trains_as_written_by_hand(run, tmp_path):
    report = run["report"]
    whole = [edits for edits in report["alternatives"]
             if {e["line"] for e in edits} == {marked("write"), marked("next write")}]
    assert len(whole) == 1, report["alternatives"]
    trains_as(NAME, {"edits": whole[0]}, by_hand(), tmp_path)


def test_the_first_write_alone_still_fails(run, tmp_path):
    """Why the second edit is needed: the first alone leaves the next write."""
    assert [e["line"] for e in run["report"]["edits"]] == [marked("write")]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        trains_as(NAME, run["report"], by_hand(), tmp_path)
