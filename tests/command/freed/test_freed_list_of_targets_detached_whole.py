"""A list of targets whose every entry holds a freed graph, handed whole to the loss: the edit
detaches every entry, as a list, not the one entry the loss reads first (which left the other
holding its graph), nor the list as if it were a tensor (``targets.detach()``). Made up front,
it is detached where it is made; refilled in the loop only on request, where the step reads it.
Each edited program trains as by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

UP_FRONT = "freed_list_of_targets_handed_whole.py"
ON_REQUEST = "freed_list_of_targets_refilled_on_request.py"
DETACHED = "targets = [s.detach() for s in targets]"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([UP_FRONT, ON_REQUEST], tmp_path_factory.mktemp("targets"))


@pytest.mark.parametrize("name, mark, at", [(UP_FRONT, "taken", 1), (ON_REQUEST, "matched", 0)])
def test_every_entry_is_detached(runs, name, mark, at):
    report = runs[name]["report"]
    assert report["verdict"] == "gone", runs[name]["text"]
    edit = report["edits"][0]
    assert edit["line"] == marked(name, mark) and edit["new"][at].strip() == DETACHED, edit


def _by_hand() -> dict:
    torch.manual_seed(0)
    layers = nn.ModuleList([nn.Linear(5, 5), nn.Linear(5, 5)])

    def activations(x):
        found = []
        for layer in layers:
            x = torch.relu(layer(x))
            found.append(x)
        return found

    image = torch.zeros(1, 5, requires_grad=True)
    opt = torch.optim.Adam([image], lr=0.1)
    with torch.no_grad():
        targets = activations(torch.rand(1, 5))
    for _ in range(4):
        opt.zero_grad()
        sum((c - w).pow(2).mean() for c, w in zip(activations(image), targets)).backward()
        opt.step()
    return {"image": image, "layers.0.weight": layers[0].weight}


@pytest.mark.parametrize("name", [UP_FRONT, ON_REQUEST])
def test_the_edit_trains_as_by_hand(runs, name, tmp_path):
    trains_as(name, runs[name]["report"], _by_hand(), tmp_path)
