"""A write into a cache entry that the source keys by an attribute (``cache[self.index]``), which
the recording names by the key it had (``cache[1]``): the copy is made of the entry as the
source names it, so each layer's write goes into a copy of its own entry (a copy of ``cache[1]``
alone would leave the other layer's write changing what its product saved). The edited program
trains as by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_cache_entry_keyed_by_attribute.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("keyed"))[NAME]


def test_the_copy_names_the_entry_as_the_source_does(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    edit = report["edits"][0]
    assert edit["line"] == marked(NAME, "written") and \
        edit["new"][0].strip() == "cache[self.index] = cache[self.index].clone()", edit


def _by_hand() -> dict:
    torch.manual_seed(0)
    mixes = [nn.Linear(4, 4), nn.Linear(4, 4)]
    opt = torch.optim.SGD([p for m in mixes for p in m.parameters()], lr=0.1)
    for _ in range(3):
        x = torch.randn(2, 3, 4)
        total = 0
        for mix in mixes:
            state = torch.ones(2, 4)
            for t in range(3):
                state = torch.sigmoid(mix(x[:, t])) * state + x[:, t]
            total = total + state.pow(2).mean()
        opt.zero_grad()
        total.backward()
        opt.step()
    return {"cells.0.mix.weight": mixes[0].weight, "cells.1.mix.weight": mixes[1].weight}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], _by_hand(), tmp_path)


ARITHMETIC = "inplace_list_entry_by_expression_index.py"


def test_an_entry_named_by_an_expression_is_written_anew_as_it_is(tmp_path):
    """Only a key the recording saw (``cache[1]``) is named as the source names it; an entry the
    source names by an expression (``levels[i - 1]``) is written out of place as it stands, not
    taken for another entry the line reads (``levels[i]``)."""
    run = recorded_runs([ARITHMETIC], tmp_path)[ARITHMETIC]
    assert run["report"]["verdict"] == "gone", run["text"]
    edit = run["report"]["edits"][0]
    assert edit["line"] == marked(ARITHMETIC, "written") and edit["new"][0].strip().startswith(
        "levels[i - 1] = levels[i - 1] + F.interpolate(levels[i]"), edit
