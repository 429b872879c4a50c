"""A loss built from parts that a loop's header cut from the logits, with the optimizer's step
between the parts' backward calls (tests/scripts/e5_inplace_one_forward_stepped_per_slice.py):
the header read the old logits once, so building the logits again before the backward would
change nothing. The step is named, no edit is printed, and the fix in words still says to build
the loss after the step.
"""

from __future__ import annotations

import pytest

from command_runs import command_reports


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(["e5_inplace_one_forward_stepped_per_slice.py"],
                           tmp_path_factory.mktemp("e5"))


def test_a_carrier_read_in_a_loop_header_is_not_built_again_unread(reports):
    """The loss of each part comes from the loop's header, which read the old logits once:
    building the logits again before the backward would change nothing, so no edit is printed
    (the fix in words still says to build the loss after the step)."""
    found = reports["e5_inplace_one_forward_stepped_per_slice.py"]
    assert found["code"] == 1 and "Changed by: opt.step()  (" in found["text"], found["text"]
    assert found["report"]["edits"] == [], found["report"]["edits"]
    assert "build the loss" in found["report"]["fix"], found["report"]["fix"]
