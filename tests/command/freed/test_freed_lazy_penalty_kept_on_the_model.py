"""A penalty computed every other step and kept on the model, backpropagated by the update method
whenever it is not None: the recording shows the failing backward statement freed the graph in an
earlier pass. The program gives the penalty None as "nothing to add", so the edit gives it None
right after its backward; it holds when run (detaching the penalty instead leaves a loss without
a graph, and fails), and the fix trains as the program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_lazy_penalty_kept_on_the_model.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("penalty"))[NAME]


def test_the_penalty_given_none_after_its_backward_is_the_fix(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-2000:]
    fails = marked(NAME, "fails")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(fails, [
        "            (0.01 * self.penalty).backward()  # fails",
        "            self.penalty = None"])]
    assert "is given None right after its backward" in run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    embed, head = nn.Embedding(10, 4), nn.Linear(4, 3)
    optimizer = torch.optim.SGD([*embed.parameters(), *head.parameters()], lr=0.1)
    for step in range(4):
        tokens, tags = torch.randint(0, 10, (8,)), torch.randint(0, 3, (8,))
        loss = nn.functional.cross_entropy(head(embed(tokens)), tags)
        if step % 2 == 0:
            loss = loss + 0.01 * (embed.weight.t() @ embed.weight - torch.eye(4)).pow(2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"tagger.embed.weight": embed.weight, "tagger.head.weight": head.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
