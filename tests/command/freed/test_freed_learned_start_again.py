"""The freed-graph error where a module keeps its updated state on itself and reads it with a
learned start for the first call (``self.start if self.memory is None else self.memory``,
:func:`autograd_lens.explain.made_again.start_again`): each call starts from the learned start
again. The detach of the kept state, also tried, fails its run (the learned start gets no
gradient after the first batch) and is printed only as a failed attempt; the edit that holds is
applied, run, and its weights compared with the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_memory_kept_with_a_learned_start.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("start"))[NAME]


def test_each_call_starts_from_the_learned_start(run):
    (edit,) = run["report"]["edits"]
    assert edit["line"] == marked(NAME, "enters"), edit
    assert edit["new"] == ["        memory = self.start  # enters"], edit
    assert "the state is no longer carried from one call to the next" in run["text"]


def test_the_detach_is_only_a_failed_attempt(run):
    (failed,) = run["report"]["failed_attempts"]
    assert "Memory.start" in run["text"] and failed["verified"]["verdict"] != "gone", failed


def by_hand() -> dict:
    torch.manual_seed(0)
    write_key, start = nn.Linear(6, 6), nn.Parameter(torch.zeros(6, 6))
    head = nn.Linear(6, 1)
    opt = torch.optim.SGD([*write_key.parameters(), start, *head.parameters()], lr=0.1)
    for _ in range(3):
        xs, y = torch.randn(4, 5, 6), torch.randn(4, 5, 1)
        memory, reads = start, []
        for x in xs:
            reads.append(x @ memory)
            memory = memory + 0.1 * torch.tanh(write_key(x)).t() @ x / len(x)
        loss = (head(torch.stack(reads)) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert start.abs().sum() > 0  # the learned start is trained
    return {"layer.start": start, "layer.write_key.weight": write_key.weight,
            "head.weight": head.weight}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"][-1500:]
    trains_as(NAME, run["report"], by_hand(), tmp_path)
