"""A state kept on a plain object, read and written back by its method twice a step: detached
where the method reads it, the second call would read the first call's value as a constant and
the first layer would train no more (a failed attempt, said so); the recording shows the
training loop's name of the object holding it at the failure, and the state is detached there,
before the loop's first statement that hands the object on. It trains as by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_state_on_an_object_rewritten_twice_a_step.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("field"))[NAME]


def test_the_fix_detaches_the_loop_s_name_before_it_is_handed_on(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    edit = report["edits"][0]
    assert edit["line"] == marked(NAME, "handed") and \
        [line.strip() for line in edit["new"]][0] == "field.values = field.values.detach()", edit


def test_the_detach_inside_the_method_is_a_failed_attempt(run):
    failed = [f for f in run["report"]["failed_attempts"]
              if f["edits"][0]["line"] == marked(NAME, "written")]
    assert failed and any("first.weight" in m for m in failed[0]["verified"]["missing"]), failed


def _by_hand() -> dict:
    torch.manual_seed(0)
    first, second = nn.Linear(3, 3), nn.Linear(3, 3)
    readout = nn.Linear(3, 1)
    opt = torch.optim.SGD([*first.parameters(), *second.parameters(), *readout.parameters()],
                          lr=0.1)
    values, target = torch.randn(8, 3), torch.randn(8, 1)
    for _ in range(3):
        values = torch.tanh(second(torch.tanh(first(values.detach()))))
        opt.zero_grad()
        (readout(values) - target).pow(2).mean().backward()
        opt.step()
    return {"net.first.weight": first.weight, "net.second.weight": second.weight,
            "readout.weight": readout.weight, "field.values": values}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
