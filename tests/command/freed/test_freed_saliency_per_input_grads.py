"""autograd.grad of one score with respect to each input in turn, in a loop: the recording shows
the failing call is an earlier pass of the same statement, from the same roots. The edit keeps
the graph in each pass (autograd.grad adds nothing into any .grad, so nothing is counted twice);
it holds when run, the text says no gradient was stopped (the verifying run counts the inputs
autograd.grad takes gradients for), and the saliency maps it gives are those of a program
written by hand that computes each map from a forward of its own."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, run_edited, value

NAME = "freed_saliency_per_input_grads.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("saliency"))[NAME]


def test_the_grad_that_keeps_the_graph_is_the_fix(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-2000:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "fails"), [
        "        maps.append(torch.autograd.grad(scores, x, retain_graph=True)[0].abs())  # fails"])]
    assert "the edit stops gradients into" not in run["text"], run["text"]


def test_the_maps_are_those_of_a_forward_per_input(run, tmp_path):
    torch.manual_seed(0)
    left, right, head = nn.Linear(3, 4), nn.Linear(2, 4), nn.Linear(8, 2)
    layers = nn.ModuleList([left, right, head])

    def model(a, b):
        return head(torch.tanh(torch.cat([left(a), right(b)], dim=1)))

    optimizer = torch.optim.SGD(layers.parameters(), lr=0.1)
    probe = [torch.randn(5, 3), torch.randn(5, 2)]
    for _ in range(3):
        a, b, y = torch.randn(8, 3), torch.randn(8, 2), torch.randint(0, 2, (8,))
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(a, b), y).backward()
        optimizer.step()
    expected = []
    for i in range(2):
        inputs = [x.detach().requires_grad_() for x in probe]
        expected.append(torch.autograd.grad(list(model(*inputs)[:, 0]), inputs[i])[0].abs())
    space = run_edited(NAME, run["report"]["edits"], tmp_path)
    for got, want in zip(value(space, "maps"), expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
