"""The verification's criterion (issue 39): an edit holds when every parameter the failing call
would reach and an optimizer updates still gets a gradient past the failure, over the run, not
per call. A parameter that no optimizer updates may lose its gradient, and the run's line says
so; a generator that gets its gradient from a loss of its own after the critic's calls is seen
getting it; the run goes on until the optimizers stepped past the failure, so an edit that
fails later in the step is caught."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import torch

from autograd_lens.source.edits import Edit
from forked_command import completed
from places import TESTS

SCRIPTS = TESTS / "scripts"
LOOKUP = "v3_lookup_encoded_once_no_optimizer_holds_it.py"
CRITIC = "v3_critic_steps_then_generator_step.py"
# The critic program's parameters, as the first run names them at its failure.
CRITIC_PARAMETERS = {"Linear.weight (2, 2)": 1, "Linear.bias (2,)": 1,
                     "Linear.weight (1, 2)": 1, "Linear.bias (1,)": 1}


def _line(name: str, text: str) -> int:
    return (SCRIPTS / name).read_text().splitlines().index(text) + 1


def _edit(name: str, old: str, *new: str) -> Edit:
    return Edit(str(SCRIPTS / name), _line(name, old), old, new)


def test_a_table_no_optimizer_updates_may_lose_its_gradient(tmp_path):
    """The detach of codes made once: verified, and said to stop gradients into the table,
    which (in the program as run) no optimizer holds; the head trains as a hand-written
    program that never differentiates into the table."""
    (tmp_path / LOOKUP).write_text((SCRIPTS / LOOKUP).read_text())
    done = completed(["--report", "r.json", LOOKUP], tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    runs = [(report["edits"], report["verified"])] + \
        list(zip(report["alternatives"], report["alternatives_verified"]))
    detached = [verified for edits, verified in runs
                if [line.strip() for e in edits for line in e["new"]][-1:] ==
                ["codes = codes.detach()"]]
    assert len(detached) == 1, done.stderr
    (verified,) = detached
    assert verified["verdict"] == "gone" and verified["missing"] == []
    assert verified["untrained"] == ["Embedding.weight (10, 3)"]
    assert "the edit stops gradients into Embedding.weight (10, 3), which no optimizer " \
           "updates." in done.stderr
    # True of the program: its one optimizer holds the head's parameters, not the table's.
    space = runpy.run_path(str(_hand_fixed(tmp_path)), run_name="__main__")
    held = {id(p) for group in space["optimizer"].param_groups for p in group["params"]}
    assert id(space["table"].weight) not in held and id(space["head"].weight) in held
    # The edit trains the head as a program written by hand with the codes as data.
    torch.manual_seed(0)
    table = torch.nn.Embedding(10, 3)
    with torch.no_grad():
        codes = table(torch.arange(6) % 10)
    head = torch.nn.Linear(3, 1)
    target = torch.randn(6, 1)
    for _ in range(4):
        weight_grad, bias_grad = torch.autograd.grad(
            (head(codes) - target).pow(2).mean(), [head.weight, head.bias])
        with torch.no_grad():
            head.weight -= 0.1 * weight_grad
            head.bias -= 0.1 * bias_grad
    torch.testing.assert_close(space["head"].weight.detach(), head.weight.detach())
    torch.testing.assert_close(space["head"].bias.detach(), head.bias.detach())


def _hand_fixed(folder: Path) -> Path:
    """The lookup program with its codes detached where they are made (the printed edit)."""
    text = (SCRIPTS / LOOKUP).read_text().replace(
        "codes = table(torch.arange(6) % 10)\n",
        "codes = table(torch.arange(6) % 10)\ncodes = codes.detach()\n")
    fixed = folder / "hand_fixed.py"
    fixed.write_text(text)
    return fixed


def test_a_generator_trained_after_the_critic_calls_still_counts():
    """The critic reads the batch detached: the critic's four calls past the failure reach no
    generator weight, the generator's own loss after them does; the run goes on to it."""
    from autograd_lens.run.verify import happened, verdict, verify

    old = "        critic_loss = critic(fake).mean() - critic(real).mean()"
    edit = _edit(CRITIC, old, "        critic_loss = critic(fake.detach()).mean() - "
                              "critic(real).mean()")
    verified = verify([edit], None, [str(SCRIPTS / CRITIC)], calls_before=1, seconds=300,
                      expected=CRITIC_PARAMETERS, steps_before=1, unstepped={})
    assert verified["error"] is None and verified["missing"] == [], verified
    assert verified["backward_calls"] >= 5  # the generator's call, the fifth, ran
    assert verdict(verified, 1) == "gone"
    assert "every parameter that the failing call would reach and an optimizer updates still " \
           "getting a gradient" in happened(verified, 1)
    assert "stops gradients" not in happened(verified, 1)


def test_detaching_the_batch_for_both_losses_is_still_rejected():
    """Detached where it is made, the batch trains no generator weight at all: its optimizer
    steps past the failure without a gradient for them."""
    from autograd_lens.run.verify import happened, verdict, verify

    old = "    fake = gen(noise)"
    edit = _edit(CRITIC, old, old, "    fake = fake.detach()")
    verified = verify([edit], None, [str(SCRIPTS / CRITIC)], calls_before=1, seconds=300,
                      expected=CRITIC_PARAMETERS, steps_before=1, unstepped={})
    assert verified["error"] is None
    assert verified["missing"] == ["Linear.bias (2,)", "Linear.weight (2, 2)"]
    assert verdict(verified, 1) == "lost_gradients"
    assert "2 parameters that the failing call would reach (or that an optimizer trained " \
           "before it) and an optimizer updates no longer " \
           "get a gradient (other than zeros) in any call past it (held when an optimizer that " \
           "updates it steps): Linear.bias (2,), " \
           "Linear.weight (2, 2)" in happened(verified, 1)


def test_an_edit_that_fails_at_the_generator_call_is_caught():
    """Making the batch again before each critic call: the critic's calls run, the generator's
    call after them goes into a graph the last critic call freed. The run goes on until the
    generator's optimizer stepped, so it sees that error (two calls past the failure, it did
    not)."""
    from autograd_lens.run.verify import verdict, verify

    old = "        opt_c.zero_grad()"
    edit = _edit(CRITIC, old, "        fake = gen(noise)", old)
    verified = verify([edit], None, [str(SCRIPTS / CRITIC)], calls_before=1, seconds=300,
                      expected=CRITIC_PARAMETERS, steps_before=1, unstepped={})
    assert verdict(verified, 1) == "still_fails"
    assert verified["backward_calls"] == 4 and "backward through the graph a second time" in \
        verified["error"]


TRAINER = "freed_batch_on_trainer_read_by_critic_steps.py"


def test_an_attribute_read_detached_where_it_enters_is_the_fix(tmp_path):
    """The batch kept on the trainer: rebinding it detached leaves the generator without a
    gradient (a failed attempt); read detached in the critic's loss, it holds, and trains as a
    program written by hand with the critic reading the batch as data."""
    (tmp_path / TRAINER).write_text((SCRIPTS / TRAINER).read_text())
    done = completed(["--report", "r.json", TRAINER], tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "gone", done.stderr
    assert [line.strip() for e in report["edits"] for line in e["new"]] == [
        "loss = self.critic(real).mean() + penalty(self.critic, self.made.detach())"]
    assert "the object still holds it with its graph for its other readers" in \
        report["computes"]
    (attempt,) = report["failed_attempts"]
    assert [line.strip() for e in attempt["edits"] for line in e["new"]][0] == \
        "self.made = self.made.detach()"
    assert attempt["verified"]["verdict"] == "lost_gradients"
    assert sorted(attempt["verified"]["missing"]) == ["Linear.bias (3,)", "Linear.weight (3, 3)"]
    from command_runs import run_edited

    edits = [dict(e, file=str(SCRIPTS / TRAINER)) for e in report["edits"]]
    (tmp_path / "edited").mkdir()
    space = run_edited(TRAINER, edits, tmp_path / "edited")
    torch.manual_seed(0)
    gen, critic = torch.nn.Linear(3, 3), torch.nn.Linear(3, 1)
    for _ in range(2):
        noise, real = torch.randn(6, 3), torch.randn(6, 3)
        made = gen(noise)
        for _ in range(3):
            loss = critic(real).mean() + critic(made.detach()).pow(2).mean()
            grads = torch.autograd.grad(loss, list(critic.parameters()))
            with torch.no_grad():
                for p, g in zip(critic.parameters(), grads):
                    p -= 0.01 * g
        grads = torch.autograd.grad(-critic(made).mean(), list(gen.parameters()))
        with torch.no_grad():
            for p, g in zip(gen.parameters(), grads):
                p -= 0.01 * g
    trained = space["trainer"]
    for mine, theirs in [(gen, trained.gen), (critic, trained.critic)]:
        for p, q in zip(mine.parameters(), theirs.parameters()):
            torch.testing.assert_close(q.detach(), p.detach())


CENTRES = "freed_features_read_by_a_module_own_update.py"


def test_the_earlier_backward_reads_what_it_was_handed_detached(tmp_path):
    """The recorded backward that freed the graph runs inside the module's forward, on a loss
    that reads the features handed to it: read there detached, the model's loss still trains
    the body through them. The edit holds, and trains as a program written by hand."""
    (tmp_path / CENTRES).write_text((SCRIPTS / CENTRES).read_text())
    done = completed(["--report", "r.json", CENTRES], tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    freed = report["recorded"]["node"]["freed_by"]["user"]
    assert freed["text"] == "pull.backward()"  # the earlier backward, as recorded
    assert report["verdict"] == "gone", done.stderr
    assert [line.strip() for e in report["edits"] for line in e["new"]] == [
        "pull = (self.centres[labels] - feats.detach()).pow(2).sum(1).mean()"]
    assert report["computes"].startswith("the earlier backward's loss reads `feats` as data")
    from command_runs import run_edited

    edits = [dict(e, file=str(SCRIPTS / CENTRES)) for e in report["edits"]]
    (tmp_path / "edited").mkdir()
    space = run_edited(CENTRES, edits, tmp_path / "edited")
    torch.manual_seed(0)
    body, head = torch.nn.Linear(4, 2), torch.nn.Linear(2, 3)
    centres = torch.zeros(3, 2, requires_grad=True)
    x, y = torch.randn(9, 4), torch.randint(0, 3, (9,))
    trained = list(body.parameters()) + list(head.parameters())
    for _ in range(3):
        feats = body(x)
        pull = (centres[y] - feats.detach()).pow(2).sum(1).mean()
        (grad,) = torch.autograd.grad(pull, [centres])
        with torch.no_grad():
            centres -= 0.5 * grad
        loss = torch.nn.functional.cross_entropy(head(feats), y) + \
            0.1 * (feats - centres[y].detach()).pow(2).sum(1).mean()
        grads = torch.autograd.grad(loss, trained)
        with torch.no_grad():
            for p, g in zip(trained, grads):
                p -= 0.1 * g
    torch.testing.assert_close(space["centres"].centres.detach(), centres.detach())
    for p, q in zip(trained, list(space["body"].parameters()) + list(space["head"].parameters())):
        torch.testing.assert_close(q.detach(), p.detach())


TABLE = "freed_table_filled_by_a_method_when_empty.py"


def test_a_cache_filled_by_a_method_is_filled_again_while_training(tmp_path):
    """``if self.table is None: self.fill()``: filled again in every call that records a graph;
    detaching the cached table would leave its parameter untrained (failed attempts). Trains
    as a program written by hand that makes the table in every step."""
    (tmp_path / TABLE).write_text((SCRIPTS / TABLE).read_text())
    done = completed(["--report", "r.json", TABLE], tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "gone", done.stderr
    assert [line.strip() for e in report["edits"] for line in e["new"]] == [
        "if self.table is None or torch.is_grad_enabled():"]
    assert all(a["verified"]["verdict"] == "lost_gradients" and a["verified"]["missing"] ==
               ["Sequential.1.log_scale (4,)"] for a in report["failed_attempts"])
    from command_runs import run_edited

    edits = [dict(e, file=str(SCRIPTS / TABLE)) for e in report["edits"]]
    (tmp_path / "edited").mkdir()
    space = run_edited(TABLE, edits, tmp_path / "edited")
    torch.manual_seed(0)
    linear, log_scale = torch.nn.Linear(4, 4), torch.zeros(4, requires_grad=True)
    trained = [linear.weight, linear.bias, log_scale]
    for _ in range(3):
        loss = (linear(torch.randn(5, 4)) * log_scale.exp().cumsum(0)).pow(2).mean()
        grads = torch.autograd.grad(loss, trained)
        with torch.no_grad():
            for p, g in zip(trained, grads):
                p -= 0.1 * g
    for p, q in zip(trained, space["net"].parameters()):
        torch.testing.assert_close(q.detach(), p.detach())



GENERATOR_FIRST = "v4_generator_loss_built_before_the_critic_step.py"
# The parameters the failing call (the critic's loss) reaches, as the first run names them.
GENERATOR_FIRST_PARAMETERS = {"Sequential.0.weight (6, 3)": 1, "Sequential.0.bias (6,)": 2,
                              "Sequential.2.weight (4, 6)": 1, "Sequential.2.bias (4,)": 1,
                              "Sequential.0.weight (6, 4)": 1, "Sequential.2.weight (1, 6)": 1,
                              "Sequential.2.bias (1,)": 1}


def test_a_gradient_cleared_before_its_optimizer_steps_does_not_count(tmp_path):
    """The generator gets gradients past the failure only from the critic's loss, after its
    own step, and its next zero_grad() clears them before it steps again: an edit that
    detaches the generated batch in the generator's own loss leaves the generator untrained,
    and is rejected, naming the generator's parameters."""
    from autograd_lens.run.verify import verdict, verify

    old = "    loss_g = bce(critic(fake), torch.ones(8, 1))  # generator"
    new = old.replace("critic(fake)", "critic(fake.detach())")
    verified = verify([_edit(GENERATOR_FIRST, old, new)], None, [str(SCRIPTS / GENERATOR_FIRST)],
                      calls_before=1, seconds=300, expected=GENERATOR_FIRST_PARAMETERS,
                      steps_before=1, unstepped={})
    assert verified["error"] is None, verified
    assert sorted(verified["missing"]) == [
        "Sequential.0.bias (6,)", "Sequential.0.weight (6, 3)", "Sequential.2.bias (4,)",
        "Sequential.2.weight (4, 6)"]
    assert not verified.get("idle"), verified  # its optimizer stepped: it is not idle
    assert verdict(verified, 1) == "lost_gradients"
    # True of the program so edited: the generator ends as it began.
    edited = tmp_path / GENERATOR_FIRST
    edited.write_text((SCRIPTS / GENERATOR_FIRST).read_text().replace(old, new))
    space = runpy.run_path(str(edited), run_name="__main__")
    torch.manual_seed(0)
    start = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.Tanh(), torch.nn.Linear(6, 4))
    assert all(torch.equal(a, b) for a, b in zip(space["gen"].parameters(), start.parameters()))


def test_without_an_optimizer_the_line_says_what_the_version_counters_show():
    """Without an optimizer, the parameters that count are those written in place before the
    failure, as their version counters show (a weight updated by hand, and also what
    torch.compile writes itself): the line says that, not that the program updates them."""
    from autograd_lens.run.verify import happened

    held = {"ran": True, "backward_calls": 3, "error": None, "steps": 0, "ended": True,
            "stopped": False, "by_hand": True, "missing": [], "untrained": []}
    assert happened(held, 1) == "3 backward calls ran without an error, past the point that " \
        "failed, every parameter that the failing call would reach and that was written in " \
        "place before it still getting a gradient"
    lost = dict(held, missing=["Linear.weight (3, 3)"])
    assert "1 parameter that the failing call would reach and that was written in place " \
        "before it no longer gets a gradient" in happened(lost, 1)
    both = dict(held, missing=["Linear.bias (3,)", "Linear.weight (3, 3)"])
    assert "2 parameters that the failing call would reach and that were written in place " \
        "before it no longer get a gradient" in happened(both, 1)
