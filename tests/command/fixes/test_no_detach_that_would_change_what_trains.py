"""Where a detach would change what the program trains, the command prints no edit, or one that
computes the value again instead. On programs of tests/scripts/e4_*.py: a running value stored
detached that the forward returns, a generated batch detached where a gradient penalty
differentiates through it, a detach put before a line that already detaches the same name; the
command diagnoses them all the same, gives no edit, and says so. On programs of
tests/scripts/e6_*.py: a window the program empties itself keeps earlier steps' outputs on
purpose (no edit), and a value computed once in a constructor, detached, would leave what
computes it untrained (it is computed again where forward reads it, and trains as by hand).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from autograd_lens.__main__ import main
from command_runs import command_reports, trains_as
from places import TESTS

SCRIPTS = TESTS / "scripts"
KEPT_ON_PURPOSE = ["e6_bias_computed_in_init.py", "e6_window_emptied_every_third.py"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(KEPT_ON_PURPOSE, tmp_path_factory.mktemp("e6"))


NO_EDIT = ["e4_potential_returned.py", "e4_penalty_on_mixed_batch.py",
           "e4_detach_branch_not_taken.py"]


def command(name: str, folder: Path) -> tuple[dict, str]:
    """The command's report on the program, and what it printed."""
    report, err = folder / "report.json", io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        with contextlib.suppress(SystemExit):
            main(["--report", str(report), "--no-verify", str(SCRIPTS / name)])
    return json.loads(report.read_text()), err.getvalue()


@pytest.mark.parametrize("name", NO_EDIT)
def test_no_edit_where_the_edit_would_cut_a_graph_the_step_needs(name, tmp_path):
    found, err = command(name, tmp_path)
    assert found["carriers"] and found["pattern"] not in ("", "unknown")  # diagnosed all the same
    assert found["edits"] == [] and found["alternatives"] == []
    assert "no edit of your lines is suggested" in err and "The fix as an edit" not in err


def test_no_edit_that_would_change_what_trains(reports):
    """A window the program empties itself keeps earlier steps' outputs on purpose."""
    found = reports["e6_window_emptied_every_third.py"]
    assert found["code"] == 1 and found["report"]["edits"] == [], found["report"]["edits"]
    assert "no edit of your lines is suggested" in found["text"], found["text"]


def test_a_value_made_in_the_constructor_is_computed_again_not_detached(reports, tmp_path):
    """A value computed once in a constructor, detached, would leave what computes it
    untrained: it is computed again where forward reads it, and trains as by hand."""
    found = reports["e6_bias_computed_in_init.py"]
    assert [(e["line"], e["new"]) for e in found["report"]["edits"]] == [(16, [
        "        return self.head(x) + self.mix(self.codes(torch.arange(3))).mean(0)"])]
    torch.manual_seed(0)
    codes, mix = nn.Embedding(3, 4), nn.Linear(4, 4)
    head = nn.Linear(4, 4)
    opt = torch.optim.SGD([*codes.parameters(), *mix.parameters(), *head.parameters()], lr=0.1)
    for _ in range(3):
        loss = (head(torch.randn(5, 4)) + mix(codes(torch.arange(3))).mean(0)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    trains_as("e6_bias_computed_in_init.py", found["report"],
              {"tagger.codes.weight": codes.weight, "tagger.mix.weight": mix.weight}, tmp_path)
