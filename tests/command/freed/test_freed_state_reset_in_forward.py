"""A state kept on a module that its forward updates, reads, then stores again (a membrane
potential reset by the spike): the edit stores it detached after the forward's last store of
it, so this call's spike keeps its graph and only the value carried into the next call is a
constant (stored detached after the first store, the spike would have no graph: "element 0 of
tensors does not require grad"). Run, the edit trains as a program written by hand that does
the same."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import command_reports, marked, trains_as

NAME = "freed_state_updated_read_then_reset_in_forward.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("reset"))[NAME]


def test_the_state_is_named_where_it_got_the_graph_and_read_first(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("self.mem", marked(NAME, "reset")), run["text"]
    assert first["enters"]["line"] == marked(NAME, "read"), first
    assert run["report"]["pattern"] == "module_state", run["text"]


def test_the_detach_follows_the_last_store(run):
    edits = run["report"]["edits"]
    assert [(e["line"], e["new"]) for e in edits] == [(marked(NAME, "reset"), [
        "        self.mem = self.mem - spike  # reset",
        "        self.mem = self.mem.detach()"])], run["text"]
    assert "no gradient flows through it from one call into the next" in \
        run["report"]["computes"], run["report"]["computes"]


def by_hand() -> dict:
    torch.manual_seed(0)
    layer = nn.Linear(6, 3)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    mem = torch.zeros(1)
    for _ in range(3):
        x, y = torch.rand(4, 6), torch.randint(0, 3, (4,))
        spikes = []
        for _ in range(4):
            mem = 0.9 * mem + layer(x)
            spike = torch.sigmoid(4.0 * (mem - 1.0))
            mem = (mem - spike).detach()
            spikes.append(spike)
        loss = F.cross_entropy(torch.stack(spikes).sum(0), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"layer.weight": layer.weight, "layer.bias": layer.bias}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
