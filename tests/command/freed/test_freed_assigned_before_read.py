"""A pass's output assigned on one branch of a loop before the loss reads it, computed from the
previous pass's output whose graph that pass's backward freed: the recording shows the tensor the
name holds made after the freeing call, so it is said to be computed in this step from the old
graph, never "read before it is assigned" (false: every path assigns it first)."""

from __future__ import annotations

import pytest

from command_runs import command_reports, marked

NAME = "freed_refined_output_fed_back.py"


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("fed_back"))[NAME]


def test_the_output_is_computed_in_this_step_not_read_first(found):
    first = found["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("guess", marked(NAME, "made")), found["text"]
    assert "is computed in this step from" in first["why"], first
    assert "before it is assigned" not in found["text"], found["text"]
