"""A dict of feature columns kept on an object of the program (``table.columns["text"]``),
one column made with a graph before training: the recording lists the tensors of an
attribute's dict among the names that hold the freed graph, so the carrier is given at the
statement that made it (as recorded), and the fix keeps that column as a constant right
after it (the embedding that encoded it is not trained: the text says the edit stops its
gradient); it trains as the program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_feature_dict_on_an_object.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("feature_dict"))[NAME]


def test_the_column_is_named_where_it_was_made(run):
    assert 'Still held, at the failing call, by: `table.columns["text"]`' in run["text"], \
        run["text"]
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ('table.columns["text"]', marked(NAME, "made")), \
        first


def test_the_column_is_kept_as_a_constant(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [(marked(NAME, "made"), [
        'table.columns["text"] = table.columns["text"].detach()'])]
    assert "the edit stops gradients into Embedding.weight (10, 4), which no optimizer updates" in \
        run["text"], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    embed = nn.Embedding(10, 4)
    with torch.no_grad():
        text = embed(torch.tensor([len(w) % 10 for w in ["a", "bb", "ccc", "dddd"] * 10]))
    num, y = torch.randn(40, 2), torch.randn(40, 1)
    model = nn.Linear(6, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for start in range(0, 40, 10):
        rows = slice(start, start + 10)
        loss = F.mse_loss(model(torch.cat([text[rows], num[rows]], 1)), y[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.weight": model.weight, "model.bias": model.bias}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
