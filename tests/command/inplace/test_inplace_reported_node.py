"""The node the in-place error reports, among several whose saved views of one tensor share its
version counter: the replay names the one whose saved tensor has the error's versions and size
(the last offsets' loss), not the first of the graph's order (the box loss, saved at version 0,
whose tensor the same writes also moved). The node was built on another line than the write,
so the edit copies the whole tensor before the write (a copy of the part the write's own line
reads would leave the view that line saved written), and the program trains as one that
rescales a detached copy."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import command_reports, marked, trains_as

NAME = "inplace_views_of_one_output_share_a_version.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("reported"))[NAME]


def test_the_recorded_node_is_the_one_the_error_reports(run):
    recorded = run["report"]["recorded"]
    assert recorded["node"]["built"]["user"]["line"] == marked(NAME, "built"), recorded["node"]
    assert recorded["write"]["user"]["line"] == marked(NAME, "write"), recorded["write"]
    assert f"was built at {NAME}:{marked(NAME, 'built')} " in run["text"], run["text"]
    versions = re.search(r"is at version (\d+); expected version (\d+)", run["text"])
    assert f"at version {versions[2]}; it is at version {versions[1]} now" in run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    head = nn.Linear(8, 8)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    torch.rand(16, 2)  # the scale: drawn as the script draws it, used only for display there
    for _ in range(2):
        feats, boxes, offsets_true = torch.randn(16, 8), torch.randn(16, 2), torch.randn(16, 6)
        out = head(feats)
        loss = F.smooth_l1_loss(out[:, :2], boxes) + sum(
            F.smooth_l1_loss(out[:, 2 + 2 * k:4 + 2 * k], offsets_true[:, 2 * k:2 * k + 2])
            for k in range(3))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"head.weight": head.weight, "head.bias": head.bias}


def test_the_edit_copies_the_whole_tensor_before_the_write_and_trains(run, tmp_path):
    edits = run["report"]["edits"]
    assert [(e["line"], e["new"][0].strip()) for e in edits] == \
        [(marked(NAME, "write"), "offsets = offsets.clone()")], edits
    trains_as(NAME, run["report"], by_hand(), tmp_path)
