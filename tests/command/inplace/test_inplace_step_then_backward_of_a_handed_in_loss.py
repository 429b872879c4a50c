"""A loss handed in by the caller, backwarded after an optimizer step changed a weight its
graph saved: the carrier is said to be handed in by the caller, never "read here before it
is assigned" (a function's parameter is bound by its call, not read unassigned)."""

from __future__ import annotations

from command_runs import command_reports, marked

NAME = "inplace_step_then_backward_of_a_handed_in_loss.py"


def test_the_loss_is_said_to_be_handed_in(tmp_path):
    run = command_reports([NAME], tmp_path)[NAME]
    handed = [c for c in run["report"]["carriers"] if c["name"] == "g_loss" and
              c["line"] == marked(NAME, "fails")]
    assert handed and handed[0]["why"].startswith(
        "is handed in by the caller here, so it brings in"), run["report"]["carriers"]
    assert "before it is assigned" not in run["text"], run["text"]
