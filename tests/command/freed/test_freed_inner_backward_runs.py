"""A custom Function whose backward runs one backward call per block through a shared embedding
that only those inner calls train (the Function returns no gradient for it). The first inner
call frees the embedding's graph; the next block's call fails at the same statement.

- Verifying an edit counts a parameter as trained only when a gradient reaches it: the engine
  calls a leaf's hook with None where a custom Function returned no gradient, and such a call
  once counted, so the edit that detaches the embedding in the inner calls (its only path to the
  parameter) was printed as the fix. It is a failed attempt now, naming the parameter it leaves
  untrained.
- The statement that freed the graph, run again, is the failing one: keeping the graph there
  (its gradient argument kept) is the fix, run, and it trains as the same model written without
  the Function."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_embedding_read_by_inner_backward_calls.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("inner_runs"))[NAME]


def test_the_detach_that_cuts_the_only_path_is_a_failed_attempt(run):
    attempts = run["report"]["failed_attempts"]
    cut = [a for a in attempts if any("shared.detach()" in line for e in a["edits"]
                                      for line in e["new"])]
    assert cut and cut[0]["verified"]["missing"] == ["Model.position (4,)"], attempts
    assert cut[0]["verified"]["verdict"] == "lost_gradients", cut[0]["verified"]


def test_the_inner_backward_keeps_the_graph_and_is_the_fix(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "fails"), [
        "    out.backward(grad, retain_graph=True)  # fails"])], run["text"]
    assert "the run of it that freed the graph started from another output than the run that " \
        "failed" in report["computes"], report["computes"]


def by_hand() -> dict:
    torch.manual_seed(0)
    blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
    position = nn.Parameter(torch.zeros(4))
    head = nn.Linear(4, 1)
    opt = torch.optim.SGD([*blocks.parameters(), position, *head.parameters()], lr=0.1)
    for _ in range(3):
        x = torch.randn(5, 4)
        shared = torch.tanh(position)
        loss = head(sum(block(x) + shared for block in blocks)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.position": position, "model.blocks.0.weight": blocks[0].weight,
            "model.head.weight": head.weight}


def test_the_kept_graph_trains_as_the_model_without_the_function(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)


def test_the_functions_ctx_attribute_is_named_once_not_the_ctx(run):
    """The custom Function's ``ctx`` is the program's own object: its attribute that holds the
    freed graph is named (`ctx.shared`), once, never the bare `ctx` as a library's state
    object would be."""
    places = [(c["name"], c["line"]) for c in run["report"]["carriers"]]
    assert places[0] == ("shared", marked(NAME, "fails")), places
    assert ("ctx.shared", marked(NAME, "hands")) in places, places
    assert all(name != "ctx" for name, _ in places) and len(set(places)) == len(places), places
