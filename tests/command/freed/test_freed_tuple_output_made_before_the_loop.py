"""A tensor made once before training by a statement that unpacks a tuple
(``memory, summary = encoder(probe)``), read by the step function inside a loop of its own:
the edit keeps it as a constant just after that statement, and trains as a program written by
hand that detaches it there."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_tuple_output_made_before_the_loop.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("tuple"))[NAME]


def test_given_where_the_tuple_was_unpacked(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("memory", marked(NAME, "made")), run["text"]


def _by_hand() -> dict:
    torch.manual_seed(0)
    proj, head = torch.nn.Linear(6, 6), torch.nn.Linear(6, 1)
    optimizer = torch.optim.SGD(list(proj.parameters()) + list(head.parameters()), lr=0.1)
    probe, _ = torch.randn(5, 6), torch.randn(5, 1)
    memory = torch.tanh(proj(probe)).detach()
    for _ in range(3):
        batch, target = torch.randn(4, 6), torch.randn(4, 1)
        feats = torch.tanh(proj(batch))
        attention = torch.softmax(feats @ memory.T, dim=-1)
        loss = (head(attention @ memory + feats.mean(0)) - target).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"encoder.proj.weight": proj.weight, "head.weight": head.weight}


def test_the_edit_keeps_it_as_made_and_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    edit, = run["report"]["edits"]
    assert edit["line"] == marked(NAME, "made") and edit["new"][-1].strip() == \
        "memory = memory.detach()", edit
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
