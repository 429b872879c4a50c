"""A memo of a helper object on a model (``if self._solved is None: self._solved = ...``) keeps
the first prediction's graph for every later step of an input's optimisation. The recording lists
it under the failing loop's own name (``model.strategy._solved``), and shows the failing backward
statement freed it in an earlier pass: that name is given None right after the backward, so the
next read computes it again; an edit run before it is printed, training as the optimisation
written by hand without a memo."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_cache_of_a_helper_object_on_a_model.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("memo"))[NAME]


def test_the_memo_is_given_none_after_the_backward(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "fails"), ["    loss.backward()  # fails",
                                 "    model.strategy._solved = None"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    log_scale = torch.zeros(())
    train_x, train_y = torch.randn(6, 2), torch.randn(6)

    def kernel(a, b):
        return torch.exp(-torch.cdist(a, b).pow(2) / log_scale.exp())

    x = torch.zeros(1, 2, requires_grad=True)
    optimizer = torch.optim.SGD([x], lr=0.1)
    for _ in range(3):
        solved = torch.linalg.solve(kernel(train_x, train_x) + 0.1 * torch.eye(6), train_y)
        loss = -(kernel(x, train_x) @ solved).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"x": x}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)


def test_storing_the_memo_without_its_graph_is_the_alternative(run, tmp_path):
    """After the None, the memo stored without its graph where it is filled is run too (for a
    memo computed from a value made once, which the None does not make again) and printed as
    an alternative; the kernel's scale is not stepped, so the input trains as by hand."""
    stored = [edits for edits in run["report"]["alternatives"]
              if [e["line"] for e in edits] == [marked(NAME, "cached")]]
    assert len(stored) == 1 and [line.strip() for line in stored[0][0]["new"]][1:] == [
        "if self._solved is not None:", "self._solved = self._solved.detach()"], \
        run["report"]["alternatives"]
    trains_as(NAME, {"edits": stored[0]}, by_hand(), tmp_path)
