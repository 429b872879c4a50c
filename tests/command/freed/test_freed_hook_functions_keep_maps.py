"""Lists that forward hooks written as functions fill (``student_feats.append(output)`` in a
function given to ``register_forward_hook``): the entry that carries the freed graph is named
as its list, at the hook's statement that keeps it (the node itself was made by the module's
call, as recorded), not as the entry where the network ran. The loss walks the lists with
``for k in range(0, len(...))``, which reads them whole, as ``range(len(...))`` does: the lists
are emptied after the update (detaching what the hook keeps would leave the hint loss without
a gradient), and the fix trains as the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_hook_functions_keep_maps.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("hook_functions"))[NAME]


def test_the_list_is_named_where_the_hook_keeps_its_entry(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == (
        "student_feats", marked(NAME, "kept"), "keep_student"), run["text"][-1500:]
    assert first["why"].startswith(
        "this statement keeps its tensor, whose node was made by `logits = student(x)` at "
        f"{NAME}:{marked(NAME, 'made')} (recorded in a replay)"), first["why"]
    assert (first["enters"]["name"], first["enters"]["line"]) == (
        "student_feats[0]", marked(NAME, "enters"))


def test_both_lists_are_emptied_after_the_update(run):
    report = run["report"]
    assert report["pattern"] == "growing_buffer", run["text"][-1500:]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [(marked(NAME, "fails"), [
        "    student_feats.clear()", "    teacher_feats.clear()"])]


def by_hand() -> dict:
    torch.manual_seed(0)

    def build():
        return nn.Sequential(nn.Linear(5, 7), nn.Softplus(), nn.Linear(7, 3))

    teacher, student = build(), build()
    teacher.requires_grad_(False)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(6, 5)
        hint = teacher[:2](x)
        soft = F.softmax(teacher[2](hint), dim=1)
        inner = student[:2](x)
        logits = student[2](inner)
        loss = F.kl_div(F.log_softmax(logits, dim=1), soft, reduction="batchmean") + \
            F.mse_loss(inner, hint)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"student.0.weight": student[0].weight, "student.2.weight": student[2].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
