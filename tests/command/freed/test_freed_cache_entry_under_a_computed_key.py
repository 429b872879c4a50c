"""A cache entry stored under a key the method computes (``self.cache[key] = ...``, guarded
by ``if key not in self.cache:``) and read by the next step: named as the store writes it, at
that store; the edit fills the entry again whenever a graph is recorded (the guard gains
``or torch.is_grad_enabled()``), and trains as a loop that looks the bias up afresh by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_cache_entry_under_a_computed_key.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("keyed"))[NAME]


def test_named_as_the_store_writes_it(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("self.cache[key]", marked(NAME, "made")), \
        run["text"]


def _by_hand() -> dict:
    torch.manual_seed(0)
    table = torch.nn.Parameter(torch.zeros(6))
    readout = torch.nn.Linear(5, 1)
    optimizer = torch.optim.SGD([table, *readout.parameters()], lr=0.1)
    offsets = (torch.arange(5)[:, None] - torch.arange(5)[None, :]).abs()
    for _ in range(3):
        scores = torch.randn(5, 5)
        loss = readout((scores + table[offsets]).softmax(-1)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"layer.table": table, "readout.weight": readout.weight}


def test_the_guard_fills_it_again_while_training(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    edit, = run["report"]["edits"]
    assert edit["new"] == ["        if key not in self.cache or torch.is_grad_enabled():"], edit
    trains_as(NAME, run["report"], _by_hand(), tmp_path)


PRIVATE = "freed_private_memo_of_a_submodule.py"


@pytest.fixture(scope="module")
def private(tmp_path_factory):
    return recorded_runs([PRIVATE], tmp_path_factory.mktemp("private"))[PRIVATE]


def test_a_submodules_private_memo_is_recorded_and_refilled(private, tmp_path):
    """The entry of a submodule's private dict is among the names the recording lists and is
    given at its store; the guard with a condition of its own (``or self.training``) gains
    ``or torch.is_grad_enabled()``, and the input trains as with the factor made afresh."""
    report = private["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("self._memo[key]", marked(PRIVATE, "made")), \
        private["text"]
    assert 'model.factor._memo["factor"]' in {h["name"] for h in report["recorded"]["holders"]}
    assert report["verdict"] == "gone", private["text"]
    edit, = report["edits"]
    assert edit["new"] == ["        if key not in self._memo or self.training or "
                           "torch.is_grad_enabled():"], edit
    torch.manual_seed(0)
    x = torch.nn.Parameter(torch.randn(2, 3))
    optimizer = torch.optim.SGD([x], lr=0.1)
    for _ in range(3):
        loss = (x @ torch.diag(torch.ones(3).exp())).sum().pow(2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    trains_as(PRIVATE, report, {"x": x}, tmp_path)
