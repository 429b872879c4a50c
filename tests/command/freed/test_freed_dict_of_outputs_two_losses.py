"""A dict of one forward's outputs, one entry's loss backpropagated by a helper, then another
entry's loss: the recording shows the failing statement never run before and the dict made in
that very pass, so no list grew across updates. The pattern is two losses over one forward (not
a buffer kept across updates, nor its RL page), and the edit keeps the first loss's graph."""

from __future__ import annotations

import pytest

from command_runs import marked, recorded_runs

NAME = "freed_dict_of_outputs_two_losses.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("dict"))[NAME]


def test_two_losses_of_one_forward_not_a_buffer(run):
    report = run["report"]
    assert report["pattern"] == "shared_trunk", run["text"]
    assert report["page"].endswith("/02_two_losses_one_forward.html"), report["page"]
    assert "kept across updates" not in run["text"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("out", marked(NAME, "got")), run["text"]


def test_the_edit_holds(run):
    assert run["report"]["verdict"] == "gone", run["text"]
