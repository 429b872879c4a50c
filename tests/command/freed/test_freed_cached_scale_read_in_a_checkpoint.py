"""A scale cached once with its graph on a module and read inside a reentrant checkpointed
block: the failing graph does not show the scale's parameter (the checkpoint builds its inner
graph only when its backward runs), yet the optimizer has stepped it with a gradient before the
failure. Detaching the cached scale would leave that parameter untrained: the verifying run
holds it to a gradient too, so that edit is a failed attempt naming it, never the fix."""

from __future__ import annotations

import pytest

from command_runs import recorded_runs

NAME = "freed_cached_scale_read_in_a_checkpoint.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("cached_scale"))[NAME]


def test_the_detach_that_stops_training_the_scale_is_not_the_fix(run):
    report = run["report"]
    assert report["verdict"] != "gone" and report["edits"] == [], run["text"][-2000:]
    (attempt,) = report["failed_attempts"]
    verified = attempt["verified"]
    assert verified["verdict"] == "lost_gradients" and verified["missing"] == ["Net.gate.temp (4,)"]
    assert "no longer gets a gradient (other than zeros) in any call past it (held when an " \
           "optimizer that updates it steps): Net.gate.temp (4,)." in run["text"], run["text"]
