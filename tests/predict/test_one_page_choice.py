"""One page choice: :func:`autograd_lens.diagnose`, called right before the backward that fails,
links the page that ``python -m autograd_lens`` links for the same program.

Both decide the pattern with :func:`~autograd_lens.predict.verdict.decide`, from a carrier
found among the tensors the program holds by name (the command at the failure, diagnose where
it is called: :mod:`autograd_lens.predict.frame_suspects`). The programs are the book's own
failing programs whose carrier is a tensor held by name.
"""

from __future__ import annotations

import runpy

import pytest
import torch

import autograd_lens as al
from autograd_lens.predict import evidence
from autograd_lens.predict import frame_suspects
from command_runs import SCRIPTS, command_reports

PROGRAMS = ["fail_01_backward_twice.py", "fail_02_two_losses.py", "fail_05_hidden_state.py",
            "fail_06_accumulated_loss.py", "fail_13_outside_loop.py",
            "fail_16_module_state.py"]
# Those whose page the graph alone does not show: only a carrier held by name tells them.
BY_CARRIER = ["fail_13_outside_loop.py", "fail_16_module_state.py"]


def diagnosed_page(name: str) -> str:
    """The first page diagnose links when the program calls it on each loss right before its
    backward, up to the backward that fails."""
    pages: list[str] = []
    backward = torch.Tensor.backward

    def diagnosed_first(loss, *args, **kwargs):
        report = al.diagnose(loss)
        if report.pattern is not None and not pages:
            pages.append(report.pattern.links()[0])
        return backward(loss, *args, **kwargs)

    torch.Tensor.backward = diagnosed_first
    try:
        with pytest.raises(RuntimeError, match="second time"):
            runpy.run_path(str(SCRIPTS / name), run_name="__main__")
    finally:
        torch.Tensor.backward = backward
    return pages[0] if pages else ""


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS, tmp_path_factory.mktemp("pages"))


@pytest.mark.parametrize("name", PROGRAMS)
def test_diagnose_links_the_page_the_command_links(reports, name):
    assert reports[name]["code"] == 1
    assert diagnosed_page(name) == reports[name]["report"]["page"]


@pytest.mark.parametrize("name", BY_CARRIER)
def test_without_the_carrier_held_by_name_the_page_is_another(reports, name, monkeypatch):
    monkeypatch.setattr(evidence, "named_tensors", lambda frames, is_stale: [])
    assert diagnosed_page(name) != reports[name]["report"]["page"]


def test_the_pattern_is_the_shared_decision(monkeypatch):
    monkeypatch.setattr(evidence, "decide", lambda evidence: "checkpoint")
    assert diagnosed_page("fail_13_outside_loop.py").endswith("18_checkpoint.html")


def test_the_tensors_held_by_name_decide_the_pattern_but_are_not_reported(monkeypatch):
    seen = []
    named = frame_suspects.named_tensors
    monkeypatch.setattr(evidence, "named_tensors",
                        lambda frames, is_stale: seen.append(1) or named(frames, is_stale))
    w = torch.ones(3, requires_grad=True)
    h = (w * w).tanh()  # made in this step, before the earlier backward: a shared part
    (h * 2).sum().backward()
    report = al.diagnose((h * 3).sum())
    assert seen and report.suspects == () and report.pattern.key == "shared_trunk"
