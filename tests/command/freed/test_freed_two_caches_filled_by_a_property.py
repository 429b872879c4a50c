"""Two caches a module's property fills together (``self._precision``, then ``self._alpha``,
guarded by ``if self._alpha is None:``), read by the next step's predictions: the recording
lists a module's private tensors among the names holding the old graph, each cache is given at the statement that
stored it, and the edit stores each without its graph there, training the input as a program
written by hand that computes both caches once, as constants."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_two_caches_filled_by_a_property.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("caches"))[NAME]


def test_each_cache_given_where_it_was_stored(run):
    given = {(c["name"], c["line"]) for c in run["report"]["carriers"][:2]}
    assert given == {("self._precision", marked(NAME, "made")),
                     ("self._alpha", marked(NAME, "too"))}, run["text"]
    recorded = run["report"]["recorded"]
    held = {h["name"] for h in recorded["holders"] + recorded["carrying"]}
    assert {"model._alpha", "model._precision"} <= held


def _by_hand() -> dict:
    torch.manual_seed(0)
    xs, ys = torch.randn(8, 2), torch.randn(8)

    def kernel(a, b):
        return torch.exp(-torch.cdist(a, b).pow(2) / torch.tensor(0.0).exp())

    precision = torch.linalg.inv(kernel(xs, xs) + 0.1 * torch.eye(8))
    alpha = precision @ ys
    x = torch.nn.Parameter(torch.zeros(1, 2))
    optimizer = torch.optim.SGD([x], lr=0.1)
    for _ in range(3):
        k = kernel(x, xs)
        loss = -((k @ alpha) + 1.0 - ((k @ precision) * k).sum(-1)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"x": x}


def test_stored_without_graph_where_made_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    lines = {e["line"] for e in run["report"]["edits"]}
    assert lines == {marked(NAME, "made"), marked(NAME, "too")}, run["report"]["edits"]
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
