"""Every candidate edit is run before it is called the fix (autograd_lens.run.verify): the known
failing prints of issue 39, each as a program of tests/scripts, now either verified clean or
printed as a failed attempt with what happened; an edit that cuts the weights from the loss
without an error is caught by the parameters it leaves without a gradient; an edit that reads
a name before it is bound is not offered."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from autograd_lens.source.edits import Edit
from autograd_lens.fixes.rules import Fix
from command_runs import commanded
from places import TESTS

SCRIPTS = TESTS / "scripts"
COMMANDED = ["g4_policy_log_probs_and_rewards_never_cleared.py",
             "g4_clip_between_two_backward_calls.py", "g4_sum_of_two_losses_one_step.py"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("candidates")
    return commanded(COMMANDED, base)


def test_a_buffer_fix_that_leaves_a_parallel_list_growing_is_a_failed_attempt(runs):
    """REINFORCE: emptying only the log-probabilities leaves the rewards growing; the next
    episode's sizes no longer match. Printed as a failed attempt, never as the fix."""
    found = runs["g4_policy_log_probs_and_rewards_never_cleared.py"]
    report, err = found["report"], found["text"]
    assert found["code"] == 1
    assert report["edits"] == [] and report["verdict"] == "failed" and report["verified"] is None
    (attempt,) = report["failed_attempts"]
    assert attempt["verified"]["verdict"] == "other_error"
    assert "The size of tensor a (5) must match the size of tensor b (10)" in \
        attempt["verified"]["error"]
    assert "autograd_lens: no suggested edit held when run; this failed attempt is not to " \
           "apply:" in err
    assert "The fix as an edit" not in err and "\n+++ " not in err.split("run in a sandbox")[1]


def test_two_backward_calls_around_a_clip_are_not_merged_and_not_called_the_sum(runs):
    found = runs["g4_clip_between_two_backward_calls.py"]
    report = found["report"]
    assert report["verdict"] == "gone" and report["alternatives"] == []
    assert "one backward of the sum" in report["computes"]
    assert "not the same as one backward of the sum" in report["computes"]
    assert "clip_grad_norm_" in report["computes"]
    assert [line.strip() for e in report["edits"] for line in e["new"]] == \
        ["loss_a.backward(retain_graph=True)"]
    # The edited program trains as a hand-written one: two forwards, the clip between the
    # two losses' backward calls (so it sees the first loss's gradients only).
    from command_runs import run_edited

    space = run_edited("g4_clip_between_two_backward_calls.py", report["edits"], found["folder"])
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        batch = torch.randn(16, 4)
        optimizer.zero_grad()
        net(batch)[:, 0].pow(2).mean().backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
        net(batch)[:, 1].abs().mean().backward()
        optimizer.step()
    torch.testing.assert_close(space["net"].weight.detach(), net.weight.detach())
    torch.testing.assert_close(space["net"].bias.detach(), net.bias.detach())


def test_a_merged_backward_is_confirmed_though_it_makes_fewer_calls(runs):
    """One backward of the sum: its run makes one call where the first run failed on its
    second, then the program ends; the verification says the error is gone."""
    found = runs["g4_sum_of_two_losses_one_step.py"]
    report, err = found["report"], found["text"]
    assert report["verdict"] == "gone" and report["verified"]["backward_calls"] == 1
    assert report["verified"]["merges"] is True and report["verified"]["ended"] is True
    assert report["computes"].startswith("one backward of the summed losses")
    assert [v["verdict"] for v in report["alternatives_verified"]] == ["gone"]
    assert "does not show whether the error is gone" not in err
    assert "The fix as an edit of your program, run and verified (one backward of the summed" in err
    from command_runs import run_edited

    space = run_edited("g4_sum_of_two_losses_one_step.py", report["edits"], found["folder"])
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    out = net(torch.randn(16, 4))
    grads = torch.autograd.grad(out[:, 0].pow(2).mean() + out[:, 1].abs().mean(),
                                [net.weight, net.bias])
    torch.testing.assert_close(space["net"].weight.grad, grads[0])
    torch.testing.assert_close(space["net"].bias.grad, grads[1])


def _line(script: Path, text: str) -> int:
    return script.read_text().splitlines().index(text) + 1


def test_detaching_the_only_path_to_the_weights_is_a_failed_attempt(tmp_path):
    """A value yielded by a generator, detached where it comes in: the first backward finds
    nothing that requires grad."""
    from autograd_lens.text.edit_block import edit_text
    from autograd_lens.run.verify import verdict, verify

    script = SCRIPTS / "g4_batches_from_a_generator_detached_at_the_yield.py"
    line = "    loss = output.pow(2).mean()"
    number = _line(script, line)
    cut = Edit(str(script), number, line, ("    output = output.detach()", line))
    verified = verify([cut], None, [str(script)], calls_before=1, seconds=300)
    assert verdict(verified, 1) == "other_error"
    assert "element 0 of tensors does not require grad" in verified["error"]
    text = edit_text([Fix("the kept value comes in without its graph", (cut,))], None,
                     [verified], calls_before=1)
    assert "no suggested edit held when run; this failed attempt is not to apply" in text
    assert "The fix as an edit" not in text and "element 0 of tensors" in text


def test_an_edit_that_leaves_the_encoder_without_gradient_is_caught(tmp_path):
    from autograd_lens.run.verify import happened, verdict, verify

    script = SCRIPTS / "g4_encoder_and_decoder_trained_together.py"
    line = "    code = encoder(x)"
    cut = Edit(str(script), _line(script, line), line, ("    code = encoder(x).detach()",))
    expected = {"Linear.weight (4, 3)": 1, "Linear.bias (4,)": 1, "Linear.weight (1, 4)": 1,
                "Linear.bias (1,)": 1}
    verified = verify([cut], None, [str(script)], calls_before=1, seconds=300,
                      expected=expected, steps_before=1)
    assert verified["error"] is None and verified["backward_calls"] == 4
    assert verified["missing"] == ["Linear.bias (4,)", "Linear.weight (4, 3)"]
    assert verdict(verified, 1) == "lost_gradients"
    assert "2 parameters that the failing call would reach no longer get a gradient (other " \
           "than zeros) in any call past it (held when an optimizer that updates it steps): " \
           "Linear.bias (4,), Linear.weight (4, 3)" in \
        happened(verified, 1)
    # The program's one optimizer updates all four: so counted, the cut is rejected too.
    stepped = verify([cut], None, [str(script)], calls_before=1, seconds=300,
                     expected=expected, steps_before=1, unstepped={})
    assert stepped["missing"] == ["Linear.bias (4,)", "Linear.weight (4, 3)"]
    assert verdict(stepped, 1) == "lost_gradients"
    kept = verify([Edit(str(script), _line(script, line), line, (line + "  # unchanged",))],
                  None, [str(script)], calls_before=1, seconds=300, expected=expected,
                  steps_before=1)
    assert kept["missing"] == [] and verdict(kept, 1) == "gone"


DETACH_TOO_EARLY = '''import torch

model = torch.nn.Linear(3, 1)


def train(steps):
    for step in range(steps):
        output = model(torch.randn(4, 3))
        output.sum().backward()
    return output


train(2)
'''


def test_an_edit_reading_a_name_before_it_is_bound_is_left_out(tmp_path):
    import linecache

    from autograd_lens.source.bound_names import names_bound

    script = tmp_path / "early.py"
    script.write_text(DETACH_TOO_EARLY)
    linecache.checkcache(str(script))
    assigned = "        output = model(torch.randn(4, 3))"
    number = DETACH_TOO_EARLY.splitlines().index(assigned) + 1
    early = Fix("detached before", (Edit(str(script), number, assigned,
                                          ("        output = output.detach()", assigned)),))
    late = Fix("detached after", (Edit(str(script), number, assigned,
                                       (assigned, "        output = output.detach()")),))
    kept, why = names_bound([early, late])
    assert kept == [late]
    assert why == ["the edit (detached before) reads `output` at its line 8, where that name is "
                   "not yet bound on every path (it would raise UnboundLocalError or NameError)"]
    # Bound before on one path only (a branch), it is left out too; a global or a parameter is
    # bound everywhere.
    branch = Fix("in a branch", (Edit(str(script), number + 1, "        output.sum().backward()",
                                      ("        output.sum().backward()",
                                       "        if step:",
                                       "            kept = output",
                                       "        print(kept, steps, model)")),))
    assert names_bound([branch])[0] == []
    fine = Fix("fine", (Edit(str(script), number + 1, "        output.sum().backward()",
                             ("        output.sum().backward()",
                              "        print(output, steps, model, len)")),))
    assert names_bound([fine])[0] == [fine]


SET_IN_INIT = '''import torch


class Head(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale.exp()
        self.bias = torch.zeros(2)
'''


def test_an_edit_reading_an_attribute_before_init_sets_it_is_left_out(tmp_path):
    """``self.scale = self.scale.detach()`` put before ``__init__`` first sets ``self.scale``
    would raise AttributeError: left out, with why; put after it, it is kept."""
    import linecache

    from autograd_lens.source.bound_names import names_bound

    script = tmp_path / "head.py"
    script.write_text(SET_IN_INIT)
    linecache.checkcache(str(script))
    made = "        self.scale = scale.exp()"
    number = SET_IN_INIT.splitlines().index(made) + 1
    early = Fix("detached before", (Edit(str(script), number, made,
                                          ("        self.scale = self.scale.detach()", made)),))
    late = Fix("detached after", (Edit(str(script), number, made,
                                       (made, "        self.scale = self.scale.detach()")),))
    kept, why = names_bound([early, late])
    assert kept == [late]
    assert why == [f"the edit (detached before) reads `self.scale` at its line {number}, in "
                   "__init__ before the statement that first sets it (it would raise "
                   "AttributeError)"]


IN_PROCESS = '''import torch
import autograd_lens as al

torch.manual_seed(0)
cell = torch.nn.GRUCell(3, 4)
h = torch.zeros(2, 4)
with al.diagnose_on_error():
    for step in range(3):
        h = cell(torch.randn(2, 3), h)
        h.pow(2).mean().backward()
'''


def test_inside_python_the_edits_are_said_not_run(tmp_path):
    """diagnose_on_error (and so the notebook extension) does not run the program again: its
    text says the edits were not run, and where they are."""
    import runpy

    script = tmp_path / "state_in_process.py"
    script.write_text(IN_PROCESS)
    with pytest.raises(RuntimeError) as caught:
        runpy.run_path(str(script), run_name="__main__")
    text = " ".join(str(caught.value).split())
    assert "autograd_lens: the edits below were not run (here the program is not run again: " \
           "the command, python -m autograd_lens, runs each edit in a sandbox before it calls " \
           "one the fix)" in text
    assert "The fix as an edit of your program (" in text and "h = h.detach()" in text


def test_an_edit_that_leaves_only_zero_gradients_is_caught(tmp_path):
    """The ratio of new to old log-probabilities taken from one and the same tensor (as two
    computations from the same weights give it): ``exp(logp - logp)`` is 1 whatever the
    weights, the two terms' gradients cancel exactly, and the policy gets gradients of zeros
    alone: it no longer trains, though the run ends without an error."""
    from autograd_lens.run.verify import happened, verdict, verify

    script = SCRIPTS / "freed_old_log_probs_before_minibatches.py"
    line = "        ratio = torch.exp(logp - old_logp[mb])"
    edit = Edit(str(script), _line(script, line), line,
                ("        ratio = torch.exp(logp - logp)",))
    expected = {"Linear.weight (3, 4)": 1, "Linear.bias (3,)": 1}
    verified = verify([edit], None, [str(script)], calls_before=1, seconds=300,
                      expected=expected, steps_before=1)
    assert verified["error"] is None, verified
    assert verdict(verified, 1) == "lost_gradients"
    assert "2 parameters that the failing call would reach no longer get a gradient (other " \
           "than zeros) in any call past it (held when an optimizer that updates it steps): " \
           "Linear.bias (3,), Linear.weight (3, 4)" in \
        happened(verified, 1)


def test_a_gradient_counts_by_its_elements_sparse_ones_by_their_values():
    """The hook that notes a gradient reads a sparse one (an embedding's with sparse=True) by
    its values, and never raises into the program's backward."""
    from autograd_lens.run.counting import _not_zeros

    assert not _not_zeros(torch.zeros(3)) and _not_zeros(torch.tensor([0.0, 2.0]))
    assert not _not_zeros(torch.zeros(3, 3).to_sparse())
    assert _not_zeros(torch.eye(3).to_sparse())
    embedding = torch.nn.Embedding(5, 2, sparse=True)
    embedding(torch.tensor([1, 3])).sum().backward()
    assert embedding.weight.grad.is_sparse and _not_zeros(embedding.weight.grad)
