"""A part of a tensor written in place from itself (``state[layer] = cell(layer, inp,
state[layer])``, a statement on two lines)
after a node of the same statement saved the part it read: the edit computes the value first,
into a name of its own, then writes it into a copy of the tensor (a copy made before the
statement would be the tensor the value's node saves, and the write would change it), and the
program trains as a recurrence written by hand with a list of states."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_layer_state_written_from_itself.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("itself"))[NAME]


def _by_hand() -> dict:
    torch.manual_seed(0)
    inputs = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)])
    recurrent = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)])
    head = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(list(inputs.parameters()) + list(recurrent.parameters()) + list(head.parameters()), lr=0.1)
    for _ in range(3):
        xs = torch.randn(4, 3)
        state = [torch.zeros(3), torch.zeros(3)]
        for x in xs:
            inp = x
            for layer in range(2):
                state[layer] = torch.tanh(inputs[layer](inp) + recurrent[layer](state[layer]))
                inp = state[layer]
        loss = head(state[-1]).pow(2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"recurrent.0.weight": recurrent[0].weight, "head.weight": head.weight}


def test_the_value_first_then_a_copy_trains_as_by_hand(run, tmp_path):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    edit = report["edits"][0]
    assert edit["line"] == marked(NAME, "written") and [line.strip() for line in edit["new"]] == [
        "new_state = cell(layer, inp,  # written"], edit
    after, = [e for e in report["edits"] if e["line"] == edit["line"] + 1]
    assert [line.strip() for line in after["new"]][1:] == [
        "state = state.clone()", "state[layer] = new_state"], after
    trains_as(NAME, report, _by_hand(), tmp_path)
