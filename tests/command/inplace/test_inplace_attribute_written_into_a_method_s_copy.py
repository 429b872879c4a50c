"""A buffer's column written in place by the module's forward, which runs twice a step: a copy
kept in the attribute (``self.codes = self.codes.clone()``) carries the call's graph into the
next step and fails there (said as a failed attempt); the fix copies it into a name of the
method's own, made before the ``if`` that holds the write so that it is bound wherever it is
read, and every later read of the method reads it. It trains as by hand, the buffer unchanged."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_buffer_column_written_per_call.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("codes"))[NAME]


def test_the_method_s_own_copy_is_the_fix(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    edits = {e["line"]: [line.strip() for line in e["new"]] for e in report["edits"]}
    written, scored = marked(NAME, "written"), marked(NAME, "scored")
    assert edits[written - 1] == ["codes = self.codes.clone()", "if other_code is not None:"]
    assert edits[written] == ["codes[:, 0] = other_code  # written"]
    assert edits[scored] == ["return z @ codes  # scored"], edits


def test_the_copy_kept_in_the_attribute_failed(run):
    failed = [f for f in run["report"]["failed_attempts"]
              if "self.codes = self.codes.clone()" in str(f["edits"])]
    assert failed and "backward through the graph a second time" in \
        failed[0]["verified"]["error"], failed


def _by_hand() -> dict:
    torch.manual_seed(0)
    embed, table = nn.Linear(6, 4), torch.randn(4, 5)
    other = nn.Linear(6, 4)
    opt = torch.optim.SGD([*embed.parameters(), *other.parameters()], lr=0.1)
    for _ in range(3):
        a, b = torch.randn(3, 6), torch.randn(3, 6)
        code = other(a.mean(0))
        labels = torch.randint(0, 5, (3,))
        with_code = torch.cat([code[:, None], table[:, 1:]], 1)
        loss = sum(nn.functional.cross_entropy(embed(x) @ with_code, labels) for x in (a, b))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"head.embed.weight": embed.weight, "other.weight": other.weight,
            "head.codes": table}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
