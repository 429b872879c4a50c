"""The freed-graph error of dicts of tensors computed once before training through a module
whose weights still require grad: the recording names each dict entry as the source spells it
(``targets["low"]``), so the entry is found where its node was made, and a dict whose every
entry holds the freed graph is named as the dict, at the statement that made it. The fix
detaches each such dict once, just after the statement the recording shows made it; it trains
as the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_dict_targets_made_up_front.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("dicts"))[NAME]


def test_the_entries_are_recorded_as_the_source_spells_them(run):
    held = {h["name"] for h in run["report"]["recorded"]["holders"]}
    assert 'targets["high"]' in held and "targets['high']" not in held, held


def test_each_dict_is_named_where_it_was_made(run):
    carriers = [(c["name"], c["line"]) for c in run["report"]["carriers"]]
    assert carriers[:2] == [("targets", marked(NAME, "made")), ("centres", marked(NAME, "centred"))]
    assert "(and 1 more entry of it)" in run["text"]


def test_the_pattern_is_a_value_kept_without_its_graph(run):
    assert run["report"]["pattern"] == "kept_value"
    assert run["report"]["page"].endswith("/10_detach.html")


def test_each_dict_is_detached_once_where_it_is_made(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [
        (marked(NAME, "made"), ["targets = {k: v.detach() for k, v in targets.items()}"]),
        (marked(NAME, "centred"), ["centres = {k: v.detach() for k, v in centres.items()}"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    teacher_low, teacher_high = nn.Linear(12, 20), nn.Linear(20, 8)
    reference = torch.randn(16, 12)
    with torch.no_grad():
        low_target = torch.relu(teacher_low(reference))
        high_target = teacher_high(low_target)
    student_low, student_high = nn.Linear(12, 20), nn.Linear(20, 8)
    optimizer = torch.optim.SGD([*student_low.parameters(), *student_high.parameters()], lr=0.05)
    for _ in range(4):
        low = torch.relu(student_low(reference))
        high = student_high(low)
        loss = F.mse_loss(low - low.mean(0), low_target - low_target.mean(0)) + \
            F.mse_loss(high - high.mean(0), high_target - high_target.mean(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"student.low.weight": student_low.weight, "student.high.weight": student_high.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
