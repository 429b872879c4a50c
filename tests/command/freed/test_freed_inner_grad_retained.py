"""A custom Function's backward takes its gradient with autograd.grad on a graph its forward kept,
and the step runs the outer backward through the Function twice (two losses of its output, the
outer graph kept): the replay records that the same inner call freed the graph the second pass
needs, so the candidate keeps the inner call's graph. Run, it trains as the program written by
hand without the Function (the same operations, differentiated by autograd directly)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_inner_grad_of_a_function_run_twice.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("inner_grad"))[NAME]


def test_the_inner_call_keeps_its_graph(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "inner"), [
        "        return torch.autograd.grad(out, (x_, w_), grad, retain_graph=True)  # inner"])], \
        run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    inp, weight, head = nn.Linear(3, 5), nn.Parameter(torch.randn(5, 5) * 0.3), nn.Linear(5, 2)
    opt = torch.optim.SGD([*inp.parameters(), weight, *head.parameters()], lr=0.1)
    for _ in range(3):
        z = torch.tanh(inp(torch.randn(4, 3)) @ weight)
        opt.zero_grad()
        (head(z).pow(2).mean() + z.abs().mean()).backward()
        opt.step()
    return {"model.inp.weight": inp.weight, "model.weight": weight, "model.head.weight": head.weight}


def test_the_kept_inner_graph_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
