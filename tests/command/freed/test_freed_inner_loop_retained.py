"""A graph freed by a backward in an inner loop that the loop's next pass needs again (the
batch's output, computed once above the loop, read by each pass's gradient): the recording shows
the freeing call started from another loss and no optimizer step ran before the failing call, so
keeping the graph at that backward is a candidate; the pattern's own edits (compute the output
again in the loop, or detach it) fail when run, and the kept graph is printed as the fix, which
trains as the program written by hand with it."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_inner_loop_reuses_batch_output.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("inner"))[NAME]


def test_the_backward_that_frees_keeps_the_graph_and_is_the_fix(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "frees"), [
        "        consistency.backward(retain_graph=True)  # frees"])], run["text"]
    assert f"started from another loss than the call at line {marked(NAME, 'fails')}" in \
        report["computes"], report["computes"]
    assert report["failed_attempts"], run["text"]  # the pattern's own edits, run and failed
    short = run["text"].split("autograd_lens, in short:")[1]
    assert f"\nFix, as run and verified: the backward at line {marked(NAME, 'frees')} keeps " \
        "the graph" in short, short  # not the pattern's words, whose edits failed
    assert "compute it inside the loop" not in short, short


def by_hand() -> dict:
    torch.manual_seed(0)
    net = nn.Linear(6, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for _ in range(3):
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        opt.zero_grad()
        outputs = net(x)
        for _ in range(2):
            noisy = y[torch.randperm(8)]
            grads = torch.autograd.grad(F.cross_entropy(outputs, noisy), net.parameters(),
                                        create_graph=True)
            fast_weight, fast_bias = (p - 0.1 * g for p, g in zip(net.parameters(), grads))
            F.mse_loss(F.linear(x, fast_weight, fast_bias), outputs.detach()).backward(
                retain_graph=True)
        F.cross_entropy(outputs, y).backward()
        opt.step()
    return {"net.weight": net.weight, "net.bias": net.bias}


def test_the_kept_graph_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)


def test_a_loops_own_backward_is_never_given_a_kept_graph(tmp_path):
    """The same statement freeing and failing in a plain loop (a hidden state carried across
    passes): keeping its graph would send every pass through all earlier ones, so it is no
    candidate; only a backward that another backward runs is (see test_freed_inner_backward_runs)."""
    from command_runs import command_reports

    report = command_reports(["hard_verify_long.py"], tmp_path)["hard_verify_long.py"]["report"]
    edits = [report["edits"], *report["alternatives"]]
    assert report["edits"], report
    assert not any("retain_graph=True" in line for fix in edits for e in fix for line in e["new"]), \
        edits
