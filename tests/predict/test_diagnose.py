"""diagnose: right on every scenario of the book, on awkward graphs, and on generated graphs.

Every scenario test compares the prediction with what backward then really does, so a wrong
prediction fails whichever way it is wrong.
"""

from __future__ import annotations

import email.message
import importlib.metadata
import random
import tomllib

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import autograd_lens as al
from autograd_lens.fixes import patterns as patterns_module
from autograd_lens.predict import report as report_module
from lens_functions import Square
from places import REPOSITORY

DOCUMENTATION = tomllib.loads((REPOSITORY / "pyproject.toml")
                              .read_text())["project"]["urls"]["Documentation"]


# ---------------------------------------------------------------------------------------------
# Helpers


def outcome(run) -> str:
    """'ok', 'freed' or 'modified': what really happens when ``run()`` does the backward."""
    try:
        run()
    except RuntimeError as error:
        kind = al.error_kind(error)
        if kind is None:
            raise
        return kind
    return "ok"


def check(root, *, suspects=None, inputs=None, grad=False, expect_ok, pattern=None):
    """Diagnose, then run the real backward, and check both agree with ``expect_ok``."""
    report = al.diagnose(root, suspects, inputs=inputs, grad=grad)
    assert report.ok is expect_ok, str(report)
    if pattern is not None:
        assert report.pattern is not None and report.pattern.key == pattern, str(report)
    if expect_ok:
        assert report.frontier == () and report.stale == ()
    else:
        assert report.frontier and report.stale
    if grad:
        real = outcome(lambda: torch.autograd.grad(root, inputs, allow_unused=True))
    else:
        real = outcome(lambda: torch.autograd.backward(root, inputs=inputs))
    assert (real == "ok") is expect_ok, f"diagnose said ok={report.ok}, backward gave {real}"
    return report


class Double(torch.autograd.Function):
    """Saves nothing: a second backward through it works."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


class SavesButNeverReads(torch.autograd.Function):
    """Saves its input, but its backward never reads ctx.saved_tensors: a second backward works."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 3 * x

    @staticmethod
    def backward(ctx, grad):
        return 3 * grad


# ---------------------------------------------------------------------------------------------
# The book's scenarios


def test_01_backward_twice():
    X, y, w = torch.randn(8, 3), torch.randn(8, 1), torch.zeros(3, 1, requires_grad=True)
    loss = ((X @ w - y) ** 2).mean()
    assert al.diagnose(loss).ok
    loss.backward()
    report = check(loss, expect_ok=False, pattern="backward_twice")
    assert "01_backward_twice.html" in str(report)


def test_01_graph_without_saved_tensors_runs_twice():
    x = torch.ones(4, requires_grad=True)
    plain = (x + 1).sum()
    plain.backward()
    check(plain, expect_ok=True)
    scaled = (x * 2).mean()
    scaled.backward()
    check(scaled, expect_ok=False)


def test_02_two_losses_one_forward():
    trunk, a, b = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    feats = torch.tanh(trunk(torch.randn(5, 4)))
    loss_a, loss_b = a(feats).pow(2).mean(), b(feats).pow(2).mean()
    loss_a.backward()
    report = check(loss_b, expect_ok=False, pattern="shared_trunk")
    assert [f.node_name for f in report.frontier] == ["TanhBackward0"]
    assert "02_two_losses_one_forward.html" in str(report)


def test_02_sum_the_losses_is_clean():
    trunk, a, b = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    feats = torch.tanh(trunk(torch.randn(5, 4)))
    check(a(feats).pow(2).mean() + b(feats).pow(2).mean(), expect_ok=True)


def test_03_two_losses_two_forwards_and_04_two_networks():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    other = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x = torch.randn(6, 3)
    net(x).pow(2).mean().backward()
    check(net(x).abs().mean(), expect_ok=True)
    check(other(x).pow(2).mean(), expect_ok=True)


def _rnn_steps(detach: bool, lstm: bool = False):
    torch.manual_seed(0)
    cell = nn.LSTM(3, 4, batch_first=True) if lstm else nn.RNN(3, 4, batch_first=True)
    head = nn.Linear(4, 1)
    state = None
    for step in range(2):
        if state is not None and detach:
            state = tuple(s.detach() for s in state) if lstm else state.detach()
        out, state = cell(torch.randn(2, 5, 3), state)
        loss = head(out[:, -1]).pow(2).mean()
        if step == 0:
            loss.backward()
    return loss, state


def test_05_rnn_hidden_state_names_the_suspect():
    loss, h = _rnn_steps(detach=False)
    # h is the state after step 2; the stale graph comes in through the state of step 1,
    # which the new h still carries in its history.
    report = check(loss, suspects={"h": h}, expect_ok=False, pattern="hidden_state")
    assert report.suspects[0].state == "stale"
    assert "`h` still carries the graph of an earlier backward: detach it at the start of each batch" \
        in str(report)
    assert "05_rnn_hidden_state.html" in str(report)


def test_05_rnn_hidden_state_without_suspects():
    loss, _ = _rnn_steps(detach=False)
    check(loss, expect_ok=False, pattern="hidden_state")


def test_05_rnn_detached_is_clean():
    loss, h = _rnn_steps(detach=True)
    report = check(loss, suspects={"h": h}, expect_ok=True)
    assert report.suspects[0].state == "history"


def test_suspect_reaching_a_stale_graph_only_through_another_is_not_blamed():
    cell, proj = nn.RNNCell(3, 4), nn.Linear(2, 3)
    style = torch.tanh(proj(torch.ones(2)))          # computed once, outside the loop
    h = torch.zeros(1, 4)
    for step in range(2):
        h = cell(torch.randn(1, 3) + style, h.detach())   # h is detached: not the bug
        loss = h.pow(2).mean()
        if step == 0:
            loss.backward()
    report = check(loss, suspects={"h": h, "style": style}, expect_ok=False,
                   pattern="outside_loop")
    assert [(s.name, s.state) for s in report.suspects] == [("h", "history"), ("style", "stale")]
    assert "`h`" not in str(report) and "`style` still carries" in str(report)


def test_lstm_state_tuple():
    loss, state = _rnn_steps(detach=False, lstm=True)
    report = check(loss, suspects={"state": state}, expect_ok=False, pattern="hidden_state")
    assert [s.name for s in report.suspects] == ["state[0]", "state[1]"]
    loss, state = _rnn_steps(detach=True, lstm=True)
    check(loss, suspects={"state": state}, expect_ok=True)


def test_06_accumulated_loss():
    model = nn.Linear(3, 1)
    total = 0
    losses = []
    for step in range(2):
        loss = model(torch.randn(4, 3)).pow(2).mean()
        total = total + loss
        losses.append(loss)
        if step == 0:
            total.backward()
    check(total, expect_ok=False, pattern="accumulated_loss")


def test_06_running_loss_logged_as_number_is_clean():
    model = nn.Linear(3, 1)
    running = 0.0
    for _ in range(3):
        loss = model(torch.randn(4, 3)).pow(2).mean()
        check(loss, expect_ok=True)
        running += loss.item()


def test_07_missing_zero_grad_is_no_error():
    model = nn.Linear(3, 1)
    for _ in range(2):
        check(model(torch.randn(4, 3)).pow(2).mean(), expect_ok=True)


def test_08_retain_step_backward_modified_in_place():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(5, 3)).pow(2).mean()
    loss.backward(retain_graph=True)
    opt.step()
    report = check(loss, expect_ok=False, pattern="modified_in_place")
    assert {s.state for s in report.stale} == {"modified"}
    assert "08_retain_step_backward.html" in str(report)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_11_create_graph_and_higher_order():
    x = torch.randn(3, requires_grad=True)
    y = (x ** 3).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    check(g.sum(), expect_ok=True)
    z = (x.sin() * x).sum()
    z.backward(create_graph=True)   # retain_graph defaults to create_graph
    check(z, expect_ok=True)


def test_12_gan_discriminator_without_detach():
    G, D = nn.Sequential(nn.Linear(2, 4), nn.Tanh()), nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
    fake = G(torch.randn(6, 2))
    d_loss = D(fake).mean()
    d_loss.backward()
    report = check(-D(fake).mean(), expect_ok=False, pattern="shared_trunk")
    assert "12_gan_discriminator.html" in str(report)


def test_12_gan_with_detach_is_clean():
    G, D = nn.Sequential(nn.Linear(2, 4), nn.Tanh()), nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
    fake = G(torch.randn(6, 2))
    D(fake.detach()).mean().backward()
    check(-D(fake).mean(), expect_ok=True)


def test_13_tensor_outside_loop():
    enc, head = nn.Linear(3, 4), nn.Linear(4, 1)
    feats = torch.tanh(enc(torch.randn(5, 3)))   # computed once, outside the loop
    head(feats).pow(2).mean().backward()
    report = check(head(feats).abs().mean(), suspects={"feats": feats}, expect_ok=False,
                   pattern="outside_loop")
    assert "`feats` still carries the graph of an earlier backward" in str(report)
    assert "compute it inside the loop" in str(report)


def test_14_grad_then_backward():
    w = torch.randn(3, requires_grad=True)
    loss = (w.exp() * w).sum()
    torch.autograd.grad(loss, w)
    check(loss, expect_ok=False, pattern="backward_twice")
    loss = (w.exp() * w).sum()
    torch.autograd.grad(loss, w, retain_graph=True)
    check(loss, expect_ok=True)


def test_15_rl_buffers_never_cleared():
    policy = nn.Linear(2, 3)
    log_probs = []
    for episode in range(2):
        dist = torch.distributions.Categorical(logits=policy(torch.randn(2)))
        log_probs.append(dist.log_prob(torch.tensor(1)))
        loss = -torch.stack(log_probs).sum()
        if episode == 0:
            loss.backward()
    # A list kept across updates: the command names the same pattern for notebook 15's script.
    report = check(loss, suspects={"log_probs": log_probs}, expect_ok=False,
                   pattern="growing_buffer")
    assert [s.state for s in report.suspects] == ["stale", "history"]


class Centred(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("center", torch.zeros(3))

    def forward(self, x, track_history: bool):
        out = self.lin(x)
        if track_history:
            self.center = 0.9 * self.center + 0.1 * out.mean(0)
        else:
            with torch.no_grad():
                self.center.mul_(0.9).add_(0.1 * out.mean(0))
        return out - self.center


def test_16_module_state_with_history():
    model = Centred()
    model(torch.randn(4, 3), True).pow(2).mean().backward()
    loss = model(torch.randn(4, 3), True).pow(2).mean()
    report = check(loss, suspects=model, expect_ok=False, pattern="module_state")
    assert report.stale_suspects[0].name == "center"
    assert "update it under torch.no_grad()" in str(report)


def test_16_module_state_under_no_grad_is_clean():
    model = Centred()
    model(torch.randn(4, 3), False).pow(2).mean().backward()
    check(model(torch.randn(4, 3), False).pow(2).mean(), suspects=model, expect_ok=True)


def test_17_custom_function():
    x = torch.randn(3, requires_grad=True)
    y = Square.apply(x).sum()
    y.backward()
    check(y, expect_ok=False)
    z = Double.apply(x).sum()   # saves nothing: the second backward works
    z.backward()
    check(z, expect_ok=True)


def test_17_custom_function_that_never_reads_what_it_saved():
    x = torch.randn(3, requires_grad=True)
    y = SavesButNeverReads.apply(x.sin()).sum()
    y.backward()
    # Its saved tensor is freed, as the graph shows, yet backward never asks for it ...
    assert ("SavesButNeverReadsBackward", "saved_tensors", "freed") in [
        (s.node_name, s.name, s.state) for s in al.saved_tensors(y)]
    # ... and the freed slot of SinBackward0 below it is what really fails.
    report = check(y, expect_ok=False)
    assert [f.node_name for f in report.frontier] == ["SinBackward0"]
    z = SavesButNeverReads.apply(x).sum()
    z.backward()
    check(z, expect_ok=True)


@pytest.mark.parametrize("reentrant", [True, False])
def test_18_checkpoint_both_modes(reentrant):
    x = torch.randn(4, requires_grad=True)
    out = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=reentrant).sum()
    out.backward()
    check(out, expect_ok=False)
    out = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=reentrant).sum()
    out.backward(retain_graph=True)
    check(out, expect_ok=True)


@pytest.mark.parametrize("reentrant", [True, False])
def test_18_checkpoint_input_modified_in_place(reentrant):
    x = torch.randn(4, requires_grad=True)
    h = x * 1
    out = checkpoint(lambda t: t.sin().exp(), h, use_reentrant=reentrant).sum()
    with torch.no_grad():
        h.add_(1)           # the checkpoint saved h; recomputing from it now fails
    states = {(s.node_name, s.state) for s in al.saved_tensors(out)}
    assert ("MulBackward0", "alive") in states and any(s == "modified" for _, s in states)
    report = check(out, expect_ok=False, pattern="modified_in_place")
    assert {s.state for s in report.stale} == {"modified"}


def test_list_slot_of_an_index():
    x = torch.randn(5, requires_grad=True)
    y = x[torch.tensor([0, 2])].exp().sum()    # IndexBackward0 saves indices as a list
    y.backward()
    report = check(y, expect_ok=False, pattern="backward_twice")
    assert ("IndexBackward0", "indices", "freed") in [(s.node_name, s.name, s.state)
                                                       for s in report.stale]


def test_save_on_cpu():
    x = torch.randn(4, requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        y = (x.sin() * x).sum()
    assert al.diagnose(y).ok
    y.backward()
    check(y, expect_ok=False)


def test_compiled_region_is_never_called_ok():
    # aot_eager runs the compiled region's forward and backward without a C compiler.
    region = torch.compile(lambda t: (t.sin() * t).tanh(), backend="aot_eager")
    w = torch.randn(3, requires_grad=True)
    loss = region(w).sum()
    report = al.diagnose(loss)
    assert report.hidden == ("CompiledFunctionBackward",) and not report.ok
    assert report.stale == () and report.pattern is None
    assert "cannot see inside a compiled region" in str(report) and "FAIL" not in str(report)
    loss.backward()                           # this one works: the report did not say it fails
    report = al.diagnose(loss)
    assert report.hidden == ("CompiledFunctionBackward",) and not report.ok
    assert [f.node_name for f in report.frontier] == ["CompiledFunctionBackward"]
    assert "backward will FAIL" in str(report)
    assert "cannot see inside a compiled region (torch.compile): CompiledFunctionBackward" \
        in str(report)
    assert outcome(loss.backward) == "freed"   # and this one fails, as the report says


def test_links_go_to_the_documentation_address(monkeypatch):
    assert report_module.BOOK_URL == DOCUMENTATION
    assert al.PATTERNS["backward_twice"].links()[0] == \
        f"{DOCUMENTATION}notebooks/01_backward_twice.html"
    installed = email.message.Message()
    installed["Project-URL"] = "Homepage, https://example.org/home/"
    installed["Project-URL"] = "Documentation, https://example.org/book/"
    monkeypatch.setattr(importlib.metadata, "metadata", lambda name: installed)
    assert patterns_module._documentation_url() == "https://example.org/book/"

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "metadata", not_installed)
    assert patterns_module._documentation_url() == DOCUMENTATION   # read from pyproject.toml


# ---------------------------------------------------------------------------------------------
# Partial backward, two roots, anomaly mode


def test_autograd_grad_to_inner_tensor_keeps_its_producer():
    w = torch.randn(3, requires_grad=True)
    h = (w * w).sin()
    torch.autograd.grad((h * 3).sum(), h)   # frees only the nodes between the loss and h
    check((h * 2).sum(), expect_ok=True)


def test_backward_inputs_nonleaf_runs_its_producer():
    w = torch.randn(3, requires_grad=True)
    h = (w * w).sin()
    (h * 3).sum().backward(inputs=[h])      # runs h's own node too, and frees it
    check((h * 2).sum(), expect_ok=False)


def test_inputs_argument_only_counts_the_paths_to_the_inputs():
    w, v = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    old = (w * w).exp()
    old.sum().backward()
    root = (old * v).sum() + (v * v).sum()
    check(root, expect_ok=False)
    root = (old * v).sum() + (v * v).sum()
    check(root, inputs=[v], expect_ok=True)   # the stale part is not on a path to v
    root = (old * v).sum() + (v * v).sum()
    check(root, inputs=[w], expect_ok=False)


def test_grad_mode_mirrors_autograd_grad():
    w = torch.randn(3, requires_grad=True)
    h = (w * w).sin()
    (h.sum()).backward(inputs=[w])          # frees h's graph
    root = (h.detach() * 0 + h * 2).sum()
    check(root, inputs=[h], grad=True, expect_ok=True)   # autograd.grad stops above h
    root = (h * 2).sum()
    check(root, inputs=[h], expect_ok=False)             # backward(inputs=[h]) runs h's node


def test_graph_reached_from_two_roots():
    w = torch.randn(3, requires_grad=True)
    shared = (w * w).tanh()
    a, b = (shared * 2).sum(), (shared * 3).sum()
    assert al.diagnose([a, b]).ok
    a.backward()
    report = al.diagnose([a, b])
    assert not report.ok
    assert not al.diagnose(b).ok
    assert outcome(lambda: b.backward()) == "freed"


def test_anomaly_mode_names_the_line():
    w = torch.randn(3, requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        feats = torch.tanh(w * 2)  # THE LINE
        feats.sum().backward()
        loss = (feats * 3).sum()
    report = al.diagnose(loss)
    assert report.anomaly
    source = report.frontier[0].source
    assert source.code == "feats = torch.tanh(w * 2)  # THE LINE"
    assert source.where.startswith("test_diagnose.py:")
    assert "feats = torch.tanh(w * 2)" in str(report)


# ---------------------------------------------------------------------------------------------
# No false alarms; bad input; no side effects


def test_sweep_of_normal_training_steps_has_no_false_alarms():
    models = [nn.Linear(4, 1), nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)),
              nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(), nn.Dropout(0.1),
                            nn.Linear(8, 1))]
    for model in models:
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(torch.randn(6, 4)), torch.randn(6, 1))
            report = al.diagnose(loss, suspects=model)
            assert report.ok, str(report)
            loss.backward()
            opt.step()


def test_retain_graph_cases_are_clean():
    w = torch.randn(3, requires_grad=True)
    loss = (w.sin() * w).sum()
    loss.backward(retain_graph=True)
    check(loss, expect_ok=True)   # the second call frees
    check(loss, expect_ok=False)


def test_bad_suspects_and_inputs():
    w = torch.ones(2, requires_grad=True)
    loss = (w * w).sum()
    with pytest.raises(TypeError, match="suspects must be a mapping"):
        al.diagnose(loss, suspects=[w])
    with pytest.raises(TypeError, match="not a tensor"):
        al.diagnose(loss, suspects={"h": 3})
    with pytest.raises(TypeError, match="inputs"):
        al.diagnose(loss, inputs=5)
    with pytest.raises(ValueError, match="require grad"):
        al.diagnose(loss, inputs=[torch.ones(2)])
    with pytest.raises(ValueError, match="pass inputs"):
        al.diagnose(loss, grad=True)


# ---------------------------------------------------------------------------------------------
# Property: report.ok agrees with what backward then does, over many generated graphs


def _generated(seed: int):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    leaves = [torch.randn(3, requires_grad=True) for _ in range(3)]
    pool = list(leaves)
    reentrant = False   # a reentrant checkpoint refuses autograd.grad and backward(inputs=...)
    ops = ["mul", "add", "sin", "exp", "tanh", "square", "double", "unread", "ckpt", "ckpt_r",
           "scale"]
    for _ in range(rng.randint(2, 9)):
        op = rng.choice(ops)
        a, b = rng.choice(pool), rng.choice(pool)
        if op == "mul":
            out = a * b
        elif op == "add":
            out = a + b
        elif op == "sin":
            out = a.sin()
        elif op == "exp":
            out = a.exp()
        elif op == "tanh":
            out = a.tanh()
        elif op == "square":
            out = Square.apply(a)
        elif op == "double":
            out = Double.apply(a)
        elif op == "unread":
            out = SavesButNeverReads.apply(a)
        elif op == "scale":
            out = a * 2
        else:
            out = checkpoint(lambda t: t.cos() * t, a, use_reentrant=(op == "ckpt_r"))
            reentrant = reentrant or op == "ckpt_r"
        pool.append(out)
    inner = [t for t in pool if t.grad_fn is not None]
    # Earlier activity on the graph: a backward, a grad to an inner tensor, an in-place update.
    for _ in range(rng.randint(0, 3)):
        actions = ["backward", "backward", "backward", "backward_retain", "inplace", "create"]
        if not reentrant:
            actions += ["grad_inner", "inputs_leaf"]
        action = rng.choice(actions)
        source = rng.choice(inner)
        if action == "inplace":
            with torch.no_grad():
                rng.choice(leaves).add_(0.5)
            continue
        if action == "grad_inner":
            below = [t for t in inner if t is not source]
            target = rng.choice(below) if below else source
            run = lambda: torch.autograd.grad(source.sum(), target, allow_unused=True)  # noqa: E731
        else:
            options = {"backward": {}, "backward_retain": {"retain_graph": True},
                       "create": {"create_graph": True},
                       "inputs_leaf": {"inputs": [rng.choice(leaves)]}}[action]
            run = lambda: source.sum().backward(**options)  # noqa: E731
        outcome(run)   # an earlier step may itself fail part-way: that is realistic too
    chosen = rng.sample(inner, k=min(len(inner), rng.randint(1, 2)))
    root = sum(t.sum() for t in chosen) * 1.0
    mode = "full" if reentrant else rng.choice(["full", "full", "inputs", "grad"])
    targets = None if mode == "full" else [rng.choice(leaves + inner)]
    return root, targets, mode


_CREATE_GRAPH_WARNING = "ignore:Using backward\\(\\) with create_graph=True:UserWarning"


@pytest.mark.filterwarnings(_CREATE_GRAPH_WARNING)
def test_property_prediction_matches_backward():
    seen = {"ok": 0, "fail": 0}
    for seed in range(600):
        root, targets, mode = _generated(seed)
        report = al.diagnose(root, inputs=targets, grad=(mode == "grad"))
        if mode == "grad":
            real = outcome(lambda: torch.autograd.grad(root, targets, allow_unused=True))
        else:
            real = outcome(lambda: torch.autograd.backward(root, inputs=targets))
        assert report.ok == (real == "ok"), f"seed {seed} ({mode}): {report!r}, backward: {real}"
        seen["ok" if report.ok else "fail"] += 1
    assert seen["ok"] > 100 and seen["fail"] > 100, seen   # both outcomes really exercised


# ---------------------------------------------------------------------------------------------
# At the moment of failure


def test_diagnose_on_error_adds_the_diagnosis_and_restores_everything():
    originals = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad,
                 torch.autograd._engine_run_backward)
    w = torch.randn(3, requires_grad=True)
    h = (w * w).tanh()
    (h * 2).sum().backward()
    with pytest.raises(RuntimeError) as caught:
        with al.diagnose_on_error(suspects=lambda: {"h": h}):
            (h * 3).sum().backward()
    text = str(caught.value)
    assert al.is_freed_graph_error(caught.value)
    assert "backward will FAIL" in text and "'h' still carries the graph" in text
    # The failing call ran (and freed) this step's own MulBackward0 before it reached the stale
    # node: the diagnosis, made after it, does not blame that node.
    assert "- TanhBackward0" in text and "MulBackward0" not in text
    assert (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad,
            torch.autograd._engine_run_backward) == originals


def test_diagnose_on_error_leaves_working_steps_alone():
    model = nn.Linear(3, 1)

    @al.diagnose_on_error()
    def step():
        loss = model(torch.randn(4, 3)).pow(2).mean()
        (g,) = torch.autograd.grad(loss, model.bias, retain_graph=True)
        loss.backward()
        return g

    reference = nn.Linear(3, 1)
    reference.load_state_dict(model.state_dict())
    torch.manual_seed(1)
    g = step()
    torch.manual_seed(1)
    loss = reference(torch.randn(4, 3)).pow(2).mean()
    loss.backward()
    assert torch.equal(model.weight.grad, reference.weight.grad)
    assert torch.equal(g, reference.bias.grad)


def test_diagnose_on_error_other_errors_untouched():
    with pytest.raises(RuntimeError, match="does not require grad") as caught:
        with al.diagnose_on_error():
            torch.ones(2).sum().backward()
    assert "autograd_lens" not in str(caught.value)


def test_ipython_extension_loads_and_unloads(capsys):
    original = torch.autograd._engine_run_backward
    al.load_ipython_extension(None)
    try:
        assert torch.autograd._engine_run_backward is not original
        w = torch.randn(2, requires_grad=True)
        loss = (w * w).sum()
        loss.backward()
        with pytest.raises(RuntimeError, match="backward will FAIL"):
            loss.backward()
    finally:
        al.unload_ipython_extension(None)
    assert torch.autograd._engine_run_backward is original
    assert "diagnosis" in capsys.readouterr().out
