"""A buffer refilled in a loop by a run of in-place calls with a computation between them
(``trace.detach_()``, ``decay = ...``, ``trace.copy_(decay)``), which an earlier turn's node
saved: the copy that keeps the saved tensor goes before the first of the run, the in-place
detach included (a copy between them would leave the detach acting on a tensor a node saved),
and the program trains as one written out of place by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_refill_after_detach_and_a_computation.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("refill"))[NAME]


def test_the_write_is_the_one_recorded(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("trace", marked(NAME, "fails")), run["text"]


def _by_hand() -> dict:
    torch.manual_seed(0)
    rates = torch.nn.Linear(3, 2)
    gain = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD(list(rates.parameters()) + [gain], lr=0.05)
    for _ in range(3):
        mu = rates(torch.randn(5, 3)).mean(0)
        loss = sum((torch.exp(-mu * (t + 1)) * gain).sum().pow(2) for t in range(3))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"rates.weight": rates.weight, "gain": gain}


def test_the_copy_goes_before_the_run_and_trains_as_by_hand(run, tmp_path):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    edit, = report["edits"]
    assert edit["line"] == marked(NAME, "first") and \
        edit["new"][0].strip() == "trace = trace.detach().clone()", edit
    trains_as(NAME, report, _by_hand(), tmp_path)
