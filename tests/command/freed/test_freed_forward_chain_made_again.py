"""A loss made above a loop by a chain of statements (``pred``, ``err``, ``loss``), each reading
the one before, then backpropagated in every pass: the recording shows every name of the chain
holding the freed graph, so computing the loss again alone would read it back in; the candidate
computes the whole chain again at the top of the loop, from the names that hold no graph. Run,
it trains as plain gradient descent written by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_forward_chain_above_a_manual_loop.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("chain"))[NAME]


def test_the_chain_is_computed_again_at_the_top_of_the_loop(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "top"), [
        "    pred = x @ w", "    err = pred - y", "    loss = err.pow(2).mean()",
        "    w.grad = None  # top"])], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    x, y = torch.randn(10, 3), torch.randn(10, 1)
    w = torch.randn(3, 1, requires_grad=True)
    for _ in range(4):
        w.grad = None
        ((x @ w - y) ** 2).mean().backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
    return {"w": w}


def test_the_chain_made_each_pass_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
