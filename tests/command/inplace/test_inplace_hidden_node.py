"""The in-place error where the node that saved the tensor is out of reach: an in-place
operation on a view (a linear layer's 3-d output) is recorded as a CopySlices node that keeps
the operation's own node inside, so no walk of the graph finds the ReLU's node whose saved
result a later ``+=`` changed. The replay still names the write, from the recorded writes of a
tensor of the reported size and versions, says that the save itself was not recorded, and the
edit written out of place trains as the program written so by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import command_reports, marked, trains_as

NAME = "inplace_relu_of_a_view_then_shifted.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("hidden"))[NAME]


def test_the_write_is_recorded_though_no_node_shows_the_save(run):
    recorded = run["report"]["recorded"]
    assert recorded["node"] is None
    assert recorded["copy_slices"] >= 1
    write = recorded["write"]
    assert (write["user"]["line"], write["shape"], write["version"]) == \
        (marked(NAME, "write"), [3, 5, 16], 2), write
    assert (write["backward_calls"], write["steps"]) == (None, None)  # the save is not known
    assert f"Changed by: hidden += self.shift  ({NAME}:{marked(NAME, 'write')} in forward)" \
        in run["text"], run["text"]
    assert "so the save itself is not recorded" in run["text"]
    assert "Between the save and that write" not in run["text"]


def test_the_carrier_is_the_write(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("hidden", marked(NAME, "write")), first


def by_hand() -> dict:
    torch.manual_seed(0)
    up, down = nn.Linear(8, 16), nn.Linear(16, 8)
    shift = nn.Parameter(torch.zeros(16))
    opt = torch.optim.Adam([*up.parameters(), *down.parameters(), shift], lr=1e-2)
    for _ in range(2):
        tokens, target = torch.randn(3, 5, 8), torch.randn(3, 5, 8)
        out = tokens + down(torch.relu(up(tokens)) + shift)
        loss = ((out - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"mixer.up.weight": up.weight, "mixer.down.weight": down.weight,
            "mixer.shift": shift}


def test_the_edit_writes_anew_and_trains_as_by_hand(run, tmp_path):
    edits = run["report"]["edits"]
    assert [(e["line"], e["new"][0].strip()) for e in edits] == \
        [(marked(NAME, "write"), "hidden = hidden + self.shift")], edits
    trains_as(NAME, run["report"], by_hand(), tmp_path)
