"""A value made before an optimizer step (``state = encoder(next_obs)`` at the end of a pass)
and read by the next pass, after the step: the policy output built from it is said to be built
after the step, from a value made before it, as recorded; never "built here, before" the step
(``statements`` holds every run to that)."""

from __future__ import annotations

import pytest

from command_runs import marked, recorded_runs

NAME = "inplace_state_made_before_the_step_read_next_pass.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("after"))[NAME]


def test_said_built_after_the_step_from_a_value_made_before(run):
    first = next((c for c in run["report"]["carriers"] if c["name"] == "logits"), None)
    assert first is not None and first["line"] == marked(NAME, "read"), run["text"]
    assert first["why"].startswith("is built here, after `optimizer.step()` at "), first
    assert "from a value made before it (recorded)" in first["why"]
    node = run["report"]["recorded"]["node"]["built"]
    assert node["user"]["line"] == marked(NAME, "made") and node["steps"] == 0
