"""A reentrant checkpoint's block that reads the previous block's output by a closure: the last
block's own backward, run inside the step's, goes on into the previous checkpoint and frees it;
the step's backward then meets it freed. The recording shows the call that freed the node run
inside the failing one (no call returned after it): the checkpoint page, and the checkpoint made
non-reentrant as the fix, run, training as the same network without checkpoints, by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_checkpoint_reads_previous_block_by_closure.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("closure"))[NAME]


def test_the_call_that_freed_it_ran_inside_the_failing_one(run):
    recorded = run["report"]["recorded"]
    freed = recorded["node"]["freed_by"]
    assert freed["nested"] and not recorded["nested"], freed
    assert freed["number"] == recorded["backwards"][-1]["number"] == recorded["call"] - 1


def test_the_checkpoint_page_and_the_non_reentrant_fix(run):
    report = run["report"]
    assert report["page"].endswith("/18_checkpoint.html"), run["text"]
    assert report["verdict"] == "gone", run["text"]
    edit = report["edits"][0]
    assert edit["line"] == marked(NAME, "block") and "use_reentrant=False" in edit["new"][0]


def _by_hand() -> dict:
    torch.manual_seed(0)
    encode, refine, score = nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 1)
    opt = torch.optim.SGD([*encode.parameters(), *refine.parameters(), *score.parameters()],
                          lr=0.05)
    for _ in range(3):
        x, y = torch.randn(5, 4), torch.randn(5, 1)
        state, total = encode(x), 0
        for _ in range(3):
            state = torch.tanh(refine(state) + torch.ones(1))
            total = total + (score(state) - y).pow(2).mean()
        opt.zero_grad()
        total.backward()
        opt.step()
    return {"encode.weight": encode.weight, "refine.weight": refine.weight,
            "score.weight": score.weight}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
