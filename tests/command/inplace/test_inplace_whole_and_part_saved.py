"""The in-place error where one index write changes what two nodes saved: the ReLU's node its
whole result, and the product's node the part the write's own line reads. Copying the part read
alone still fails (the ReLU's result is written), and is printed only as a failed attempt; the
write into a copy made just before it, with the part read copied as well, is the fix, and trains
as the program that writes the gated half into a new tensor by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import commanded, marked, trains_as
from statements import unsupported

NAME = "inplace_half_rescaled_after_relu_saved_it.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return commanded([NAME], tmp_path_factory.mktemp("both"))[NAME]


def test_the_part_copy_alone_fails_and_is_not_the_fix(run):
    report = run["report"]
    assert not unsupported(run["text"], report)
    (attempt,) = report["failed_attempts"]
    assert attempt["verified"]["verdict"] == "still_fails", attempt
    assert [e["new"] for e in attempt["edits"]] == \
        [["        hidden[:, :half] = hidden[:, :half].clone() * torch.sigmoid(self.gate(x))"
          "  # write"]]


def test_the_copy_before_the_write_with_the_part_copied_is_the_fix(run):
    report = run["report"]
    assert report["verdict"] == "gone"
    assert [(e["line"], [n.strip() for n in e["new"]]) for e in report["edits"]] == \
        [(marked(NAME, "write"), ["hidden = hidden.clone()", "hidden[:, :half] = "
          "hidden[:, :half].clone() * torch.sigmoid(self.gate(x))  # write"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    fc, gate, head = nn.Linear(6, 6), nn.Linear(6, 1), nn.Linear(6, 2)
    opt = torch.optim.SGD([*fc.parameters(), *gate.parameters(), *head.parameters()], lr=0.1)
    for _ in range(2):
        x, y = torch.randn(10, 6), torch.randint(0, 2, (10,))
        hidden = F.relu(fc(x))
        gated = torch.cat([hidden[:, :3] * torch.sigmoid(gate(x)), hidden[:, 3:]], dim=1)
        loss = F.cross_entropy(head(gated), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.0.fc.weight": fc.weight, "model.0.gate.weight": gate.weight,
            "model.1.weight": head.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
