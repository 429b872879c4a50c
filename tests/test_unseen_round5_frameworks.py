"""Losses of one forward backpropagated in turn from a temporary (``(w * loss).backward()``,
``scaler.scale(w * loss).backward()``), on programs of tests/scripts/f5_*.py, each failing on
the command as it was before them: the earlier call's root is gone at the failure, and the
nodes of the second loss, made before that call, were taken for old ones (a list kept across
updates). The watch keeps the latest freeing backward's root nodes, so which nodes it went
through is known; a genuine buffer keeps its page, and the kept nodes hold no saved tensor.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest
import torch

from autograd_lens.watch import Watch
from command_runs import command_reports

SCRIPTS = Path(__file__).parent / "scripts"
ROUND5 = sorted(p.name for p in SCRIPTS.glob("f5_*.py"))
PAGES = "https://through-the-graph.github.io/through-the-graph-a-second-time/notebooks/"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(ROUND5 + ["fail_15_rl_buffer.py"], tmp_path_factory.mktemp("f5"))


@pytest.mark.parametrize("name", ROUND5)
def test_losses_in_turn_are_two_losses_of_one_forward(name, reports):
    found = reports[name]
    report = found["report"]
    assert found["code"] == 1 and report["pattern"] == "shared_trunk", found["text"]
    assert report["page"] == PAGES + "02_two_losses_one_forward.html", found["text"]
    assert "kept across updates" not in found["text"], found["text"]
    # what the carrier named holds is the shared part the first backward went through
    assert all("[" not in c["name"] for c in report["carriers"]), found["text"]


def test_a_buffer_kept_across_updates_keeps_its_page(reports):
    found = reports["fail_15_rl_buffer.py"]
    assert found["report"]["pattern"] == "growing_buffer", found["text"]
    assert found["report"]["page"] == PAGES + "15_rl_buffers.html", found["text"]
    assert "Likely pattern: a list of tensors kept across updates" in found["text"]


def test_the_kept_root_holds_no_saved_tensor():
    """After a backward, the watch may keep its root node but nothing its graph saves: an
    intermediate the graph saved dies when the program lets go of it, as without the watch,
    also when the backward kept its graph (whose saved tensors are alive)."""
    w = torch.ones(3, requires_grad=True)
    with Watch():
        for keep in (False, True):
            middle = w * 2
            gone = weakref.ref(middle)
            (middle * middle).sum().backward(retain_graph=keep)  # a temporary root
            del middle
            gc.collect()
            assert gone() is None, keep
