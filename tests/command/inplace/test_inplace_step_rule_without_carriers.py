"""The step pattern's edit reads the recorded write itself: where no carrier of the source's
reading holds it (the report then lists only the step), the loss is still built again after
the last step before the failing backward, as when a carrier holds the write."""

from __future__ import annotations

from command_runs import SCRIPTS, marked

from autograd_lens.predict.report import PATTERNS
from autograd_lens.explain.writes import Write

NAME = "inplace_actor_loss_before_two_critic_steps.py"


def test_the_write_alone_gives_the_edit():
    path, line = SCRIPTS / NAME, marked(NAME, "write")
    step = Write("AddmmBackward0", "mat2", "critic_a", True, "step", str(path), line, "update",
                 "opt_a.step()", (1, 2), carrying=("actor_loss", "both"))
    failed = (str(path), marked(NAME, "fails"))
    pattern = PATTERNS["modified_in_place"]
    assert pattern.fixes([], failed) == []  # nothing to read the step from
    fixes = pattern.fixes([], failed, step)
    assert fixes and "built again after the step" in fixes[0].computes, fixes
    assert [(e.line, e.new[1:]) for e in fixes[0].edits] == [(marked(NAME, "last"), (
        "    both = torch.cat([states, chosen], 1)",
        "    actor_loss = -torch.min(critic_a(both), critic_b(both)).mean()"))]
