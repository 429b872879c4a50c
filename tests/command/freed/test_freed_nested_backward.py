"""The freed-graph error where the backward call that freed the graph was run by another
backward (a custom Function whose backward runs its block's graph by hand): the recording marks
that call ``nested`` (and the failing call, run by the outer backward, too), names first the
attribute of the Function's ``ctx`` that holds the freed graph, and no edit leaves it out or
keeps its graph (it is the Function's own
gradient: without it the block trains no more, though every parameter the failing call reaches
still gets a gradient). The two losses backwarded in turn, the first with ``retain_graph=True``,
get one backward of their sum, and it trains as the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_checkpoint_function_two_losses.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("nested"))[NAME]


def test_the_freeing_call_is_recorded_as_run_by_another(run):
    freed = run["report"]["recorded"]["node"]["freed_by"]
    assert freed["user"]["line"] == marked(NAME, "frees") and freed["nested"] is True, freed


def test_the_functions_ctx_attribute_is_named_first(run):
    """The failing call is the Function's own (run by the outer backward): the recording reads
    the names of its frame, ``ctx``'s attributes among them, not the outer program's losses."""
    assert run["report"]["recorded"]["nested"] is True
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("ctx.inner_out", marked(NAME, "frees")), first


def test_no_edit_leaves_out_the_functions_own_backward(run):
    report = run["report"]
    printed = [report["edits"]] + report["alternatives"] + \
        [a["edits"] for a in report["failed_attempts"]]
    assert not any(e["line"] == marked(NAME, "frees") for edits in printed for e in edits), printed


def by_hand() -> dict:
    torch.manual_seed(0)
    stem, layer = nn.Linear(5, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh())
    left, right = nn.Linear(8, 2), nn.Linear(8, 1)
    opt = torch.optim.SGD([*stem.parameters(), *layer.parameters(), *left.parameters(),
                           *right.parameters()], lr=0.1)
    x, label, size = torch.randn(10, 5), torch.randint(0, 2, (10,)), torch.randn(10, 1)
    for _ in range(3):
        h = stem(x)
        h = h + layer(h)  # the block as plain autograd computes it
        loss = nn.functional.cross_entropy(left(h), label) + (right(h) - size).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"stem.weight": stem.weight, "layer.0.weight": layer[0].weight,
            "left.weight": left.weight, "right.weight": right.weight}


def test_the_summed_backward_trains_the_block_as_by_hand(run, tmp_path):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [e["new"] for e in report["edits"]] == [[], ["    (first + second).backward()  # fails"]]
    reference = by_hand()
    assert not torch.equal(reference["layer.0.weight"], by_hand_untrained())
    trains_as(NAME, report, reference, tmp_path)


def by_hand_untrained() -> torch.Tensor:
    torch.manual_seed(0)
    nn.Linear(5, 8)
    return nn.Sequential(nn.Linear(8, 8), nn.Tanh())[0].weight.detach()
