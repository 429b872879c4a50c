"""Memories of a trained encoder read inside reentrant checkpoints, failing in the first step: the
failing call is the checkpoint's backward run inside the step's, whose graph reaches the encoder
(the step's own graph does not show it, and no optimizer has stepped yet). The parameters that
nested call reaches count as the failing call's, so detaching the memory, which leaves the
encoder untrained, is a failed attempt naming its weights, never the fix."""

from __future__ import annotations

import pytest

from command_runs import recorded_runs

NAME = "freed_memories_read_in_checkpoints.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("memories"))[NAME]


def test_the_detach_that_stops_training_the_encoder_is_not_the_fix(run):
    report = run["report"]
    assert report["verdict"] != "gone" and report["edits"] == [], run["text"][-2000:]
    detached = [a for a in report["failed_attempts"] if "without its graph" in a["computes"]]
    assert detached, report["failed_attempts"]
    for attempt in detached:
        verified = attempt["verified"]
        assert verified["verdict"] == "lost_gradients", verified
        assert verified["missing"] == ["Sequential.0.bias (6,)", "Sequential.0.weight (6, 6)"]
