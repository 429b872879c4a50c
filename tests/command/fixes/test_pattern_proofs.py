"""Every pattern's fix, executed: each pattern's proof programs (tests/proofs/<name>.py, or the
notebook's failing script in tests/scripts/ where that is the same program; named in its
catalogue entry) fail with the freed-graph (or in-place) error; the command's edit of the
program's own lines, applied, must make each run clean, and the gradients it leaves must equal
a reference computed here independently (truncated backpropagation through time with the state
computed under no_grad, the discriminator's gradient without the generator's, torch.func for
second derivatives, ...). Each fix a rule offers (the first choice and the alternatives) that
has a reference below is checked; the first choice always is.
"""

from __future__ import annotations

import linecache
import runpy
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call
from torch.utils.checkpoint import checkpoint

from autograd_lens.run.user_traceback import _failed_at
from autograd_lens.source.edits import apply
from autograd_lens.fixes.patterns import PATTERNS
from autograd_lens.run.watch import Watch
from inplace_references import INPLACE_REFERENCES
from places import TESTS

PROOFS = TESTS / "proofs"
SCRIPTS = TESTS / "scripts"
# Proof programs that are a notebook's failing script as it stands, which the command's tests run
# too: one program serves both suites.
FROM_SCRIPTS = {"gan_discriminator": "fail_12_gan.py",
                "custom_function": "fail_17_custom_function.py",
                "meta_learning": "fail_20_meta_learning.py"}
ALL = [(key, name) for key, pattern in PATTERNS.items() for name in pattern.proofs]


def program(name: str) -> Path:
    """The proof program called ``name`` in the catalogue."""
    return SCRIPTS / FROM_SCRIPTS[name] if name in FROM_SCRIPTS else PROOFS / f"{name}.py"


def diagnosed(path: Path):
    """Run a proof program under the watch: (finding, the failed call's file and line). It runs
    in a thread of its own, so that, as under the command, no frame of this file lies below the
    program's (the watch reads the program's functions from the frames)."""
    watch, saved = Watch(), (list(sys.argv), list(sys.path))
    sys.argv, sys.path[0] = [str(path)], str(path.parent)
    try:
        with ThreadPoolExecutor(1) as pool:  # one thread: the watch's thread-local parts in it
            pool.submit(watch.__enter__).result()
            try:
                pool.submit(runpy.run_path, str(path), run_name="__main__").result()
            finally:
                pool.submit(watch.__exit__, None, None, None).result()
    except RuntimeError as error:
        failed = _failed_at(error.__traceback__)
    else:
        pytest.fail(f"{path.name} does not fail")
    finally:
        sys.argv, sys.path[:] = saved
    assert watch.finding is not None
    return watch.finding, failed


def run_fixed(path: Path, edits, folder: Path) -> dict:
    assert {e.file for e in edits} == {str(path)}
    fixed = folder / path.name
    fixed.write_text("".join(apply(list(edits), linecache.getlines(str(path)))))
    return runpy.run_path(str(fixed), run_name="__main__")


def state(**objects) -> dict:
    """Each module's parameters and gradients, each tensor's gradient, each number."""
    found = {}
    for name, value in objects.items():
        if isinstance(value, nn.Module):
            for key, p in value.named_parameters():
                found[f"{name}.{key}"] = p.detach().clone()
                found[f"{name}.{key}.grad"] = p.grad
        elif isinstance(value, torch.Tensor):
            found[f"{name}.grad"] = value.grad
        else:
            found[name] = torch.tensor(float(value))
    return found


def set_grads(module: nn.Module, grads) -> nn.Module:
    for p, g in zip(module.parameters(), grads):
        p.grad = g
    return module


def close(observed: dict, expected: dict) -> None:
    assert observed.keys() == expected.keys()
    for key, value in expected.items():
        if value is None or observed[key] is None:
            assert value is None and observed[key] is None, key
        else:
            torch.testing.assert_close(observed[key], value, msg=key)


# --- the independent references, by proof program: (names to compare, one per fix) ---------


def ref_backward_twice():
    torch.manual_seed(0)
    x, w = torch.randn(6, 3), torch.randn(3, requires_grad=True)
    (g,) = torch.autograd.grad((x @ w).tanh().pow(2).mean(), w)
    w.grad = 2 * g
    return state(w=w)


def ref_closure():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3)

    def closure():  # the forward inside the closure, as LBFGS expects
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss
    opt.step(closure)
    return state(model=model)


def ref_modified_in_place():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 1))
    x, y = torch.randn(6, 4), torch.randn(6, 1)
    theta = {k: v.detach() for k, v in net.named_parameters()}

    def grad_at(params):
        params = {k: v.requires_grad_() for k, v in params.items()}
        loss = F.mse_loss(functional_call(net, params, (x,)), y)
        return dict(zip(params, torch.autograd.grad(loss, list(params.values()))))
    g0 = grad_at({k: v.clone() for k, v in theta.items()})
    theta1 = {k: theta[k] - 0.1 * g0[k] for k in theta}
    g1 = grad_at({k: v.clone() for k, v in theta1.items()})
    with torch.no_grad():
        for k, p in net.named_parameters():
            p.copy_(theta1[k])
    return state(net=set_grads(net, [g0[k] + g1[k] for k in theta]))


def ref_accumulated_loss():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    X, Y = torch.randn(12, 3), torch.randn(12, 1)
    total, grads = 0.0, None
    for step in range(3):
        loss = F.mse_loss(model(X[4 * step:4 * step + 4]), Y[4 * step:4 * step + 4])
        grads = torch.autograd.grad(loss, list(model.parameters()))
        total += loss.item()
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads):
                p -= 0.1 * g
    return state(model=set_grads(model, grads), total=total)


def ref_accumulated_augmented():
    torch.manual_seed(0)
    X, w = torch.randn(3, 4), torch.randn(4, requires_grad=True)
    (w.grad,) = torch.autograd.grad((X @ w).sin().sum(), w)
    return {**state(w=w), "total": torch.tensor(float((X @ w).sin().sum().detach()))}


def _tbptt(cell, steps, loss_of, carry):
    """Truncated BPTT without detach: each step's incoming state is computed under no_grad
    from the start, and only the step itself is differentiated."""
    params, total = list(cell.parameters()), None
    for k in range(len(steps)):
        with torch.no_grad():
            h = carry(steps[:k])
        grads = torch.autograd.grad(loss_of(k, h), params, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
        total = grads if total is None else [a + b for a, b in zip(total, grads)]
    return total


def _tbptt_cell(make_cell):
    """A cell's state carried over 4 steps, each step's loss its new state's mean square."""
    torch.manual_seed(0)
    cell, xs = make_cell(3, 4), torch.randn(4, 2, 3)

    def carry(done):
        h = torch.zeros(2, 4)
        for x in done:
            h = cell(x, h)
        return h
    grads = _tbptt(cell, xs, lambda k, h: cell(xs[k], h).pow(2).mean(), carry)
    return state(cell=set_grads(cell, grads))


def ref_hidden_tensor():
    return _tbptt_cell(nn.RNNCell)


def _tbptt_rnn(make_rnn):
    """A recurrent layer and a linear head over 3 chunks of 4 steps, the state carried from chunk
    to chunk, each chunk's loss the head's mean squared error: the layer and the head, with
    their gradients set."""
    torch.manual_seed(0)
    rnn, head = make_rnn(3, 4, batch_first=True), nn.Linear(4, 1)
    seq, target = torch.randn(2, 12, 3), torch.randn(2, 12, 1)
    both = nn.ModuleList([rnn, head])

    def loss_of(k, state):
        out, _ = rnn(seq[:, 4 * k:4 * k + 4], state)
        return F.mse_loss(head(out), target[:, 4 * k:4 * k + 4])
    grads = _tbptt(both, list(range(3)), loss_of,
                   lambda done: rnn(seq[:, :4 * len(done)])[1] if done else None)
    set_grads(both, grads)
    return rnn, head


def ref_hidden_tuple():
    lstm, head = _tbptt_rnn(nn.LSTM)
    return state(lstm=lstm, head=head)


def ref_hidden_attribute():
    gru, head = _tbptt_rnn(nn.GRU)  # the program's model holds them as .gru and .head
    return {f"model.{key}": value for key, value in state(gru=gru, head=head).items()}


def ref_hidden_nested():
    torch.manual_seed(0)
    low, high = nn.LSTMCell(3, 4), nn.LSTMCell(4, 4)
    xs, zeros = torch.randn(3, 2, 3), torch.zeros(2, 4)
    both = nn.ModuleList([low, high])

    def run(x, states):
        first = low(x, states[0])
        return first, high(first[0], states[1])

    def carry(done):
        states = ((zeros, zeros), (zeros, zeros))
        for x in done:
            states = run(x, states)
        return states
    grads = _tbptt(both, xs, lambda k, states: run(xs[k], states)[1][0].pow(2).mean(), carry)
    set_grads(both, grads)
    return state(low=low, high=high)


def ref_hidden_dict():
    return _tbptt_cell(nn.GRUCell)


def ref_module_state():
    torch.manual_seed(0)
    proj = nn.Linear(4, 3)
    batches, target = torch.randn(3, 8, 4), torch.randn(8, 3)
    center, total = torch.zeros(3), None
    for batch in batches:
        loss = (proj(batch) - center - target).pow(2).mean()  # the centre as a constant
        grads = torch.autograd.grad(loss, list(proj.parameters()))
        total = grads if total is None else [a + b for a, b in zip(total, grads)]
        with torch.no_grad():
            center = 0.9 * center + 0.1 * proj(batch).mean(0)
    return state(model=set_grads(nn.ModuleDict({"proj": proj}), total))


def ref_kept_value():
    """The weights made from the last step's predictions, as constants (under no_grad)."""
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    xs, ys = torch.randn(4, 8, 3), torch.randn(4, 8, 2)
    weight = torch.ones(2)
    for x, y in zip(xs, ys):
        pred = model(x)
        loss = (weight * (pred - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            weight = 1 / (pred.abs().mean(0) + 0.5)
    return state(model=model)


def _outside(recompute: bool):
    torch.manual_seed(0)
    encoder, head = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Linear(6, 1)
    x, y = torch.randn(10, 4), torch.randn(10, 1)
    loss = (head(encoder(x)) - y).pow(2).mean()
    params = list(head.parameters()) + (list(encoder.parameters()) if recompute else [])
    grads = torch.autograd.grad(loss, params)
    set_grads(head, [3 * g for g in grads[:2]])
    set_grads(encoder, [3 * g for g in grads[2:]])
    return state(encoder=encoder, head=head)


def _trunk():
    torch.manual_seed(0)
    trunk, reg, cls = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Linear(6, 1), nn.Linear(6, 3)
    x, y, label = torch.randn(8, 4), torch.randn(8, 1), torch.randint(0, 3, (8,))
    all_ = nn.ModuleList([trunk, reg, cls])
    loss = F.mse_loss(reg(trunk(x)), y) + F.cross_entropy(cls(trunk(x)), label)
    set_grads(all_, torch.autograd.grad(loss, list(all_.parameters())))
    return state(trunk=trunk, reg=reg, cls=cls)


def ref_growing_buffer():
    torch.manual_seed(0)
    policy, observations = nn.Linear(2, 2), torch.randn(2, 3, 2)
    loss = sum(-policy(obs).log_softmax(-1)[0] for episode in observations for obs in episode)
    set_grads(policy, torch.autograd.grad(loss, list(policy.parameters())))
    return state(policy=policy)


def ref_gan():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    D = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    bce = nn.BCEWithLogitsLoss()
    real, z = torch.randn(64, 2) * 0.5 + 2.0, torch.randn(64, 2)
    ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)
    with torch.no_grad():
        fake_data = G(z)  # the generated batch as data: no path to G
    d_grads = torch.autograd.grad(bce(D(real), ones) + bce(D(fake_data), zeros),
                                  list(D.parameters()))
    g_loss = bce(D(G(z)), ones)
    g_of_d = torch.autograd.grad(g_loss, list(D.parameters()), retain_graph=True)
    set_grads(G, torch.autograd.grad(g_loss, list(G.parameters())))
    set_grads(D, [a + b for a, b in zip(d_grads, g_of_d)])
    return state(G=G, D=D)


def ref_grad_then_backward():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))
    x = torch.randn(4, 5, requires_grad=True)
    label = torch.tensor([0, 1, 2, 0])
    grads = torch.autograd.grad(F.cross_entropy(net(x), label), [x] + list(net.parameters()))
    x.grad = grads[0]
    return state(net=set_grads(net, grads[1:]), x=x)


def _gradient_check_net():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    return net, torch.randn(5, 3, requires_grad=True)


def ref_penalty():
    net, x = _gradient_check_net()
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(params, x):
        out = lambda x: functional_call(net, params, (x,)).sum()  # noqa: E731
        g = torch.func.grad(out)(x)
        return functional_call(net, params, (x,)).mean() + g.pow(2).sum()
    g_params, g_x = torch.func.grad(loss, argnums=(0, 1))(params, x.detach())
    x.grad = g_x
    return state(net=set_grads(net, [g_params[k] for k in params]), x=x)


def ref_again():
    net, x = _gradient_check_net()
    grads = torch.autograd.grad(net(x).pow(2).mean(), [x] + list(net.parameters()))
    x.grad = grads[0]
    return state(net=set_grads(net, grads[1:]), x=x)


def _meta(second_order: bool):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    params = {k: v.detach() for k, v in model.named_parameters()}
    support = (torch.randn(10, 3), torch.randn(10, 1))
    query = (torch.randn(10, 3), torch.randn(10, 1))

    def task(weights, data):
        return ((functional_call(model, weights, (data[0],)) - data[1]) ** 2).mean()
    constant = torch.func.grad(task)(params, support)

    def outer(weights):
        inner = torch.func.grad(task)(weights, support) if second_order else constant
        adapted = {k: weights[k] - 0.1 * inner[k] for k in weights}
        return task(adapted, query) + 0.1 * task(weights, support)
    grads = torch.func.grad(outer)(params)
    return state(model=set_grads(model, [grads[k] for k in params]))


def ref_checkpoint():
    torch.manual_seed(0)
    stem, block, head = nn.Linear(4, 6), nn.Sequential(nn.Linear(6, 6), nn.Tanh()), nn.Linear(6, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    all_ = nn.ModuleList([stem, block, head])
    loss = ((head(block(stem(x).tanh())) - y) ** 2).mean()  # the same function, no checkpoint
    set_grads(all_, [2 * g for g in torch.autograd.grad(loss, list(all_.parameters()))])
    return state(stem=stem, block=block, head=head)


def ref_custom_function():
    torch.manual_seed(0)
    x = torch.randn(5, requires_grad=True)
    s = torch.sigmoid(x.detach())
    x.grad = 2 * (s + x.detach() * s * (1 - s))  # d/dx x*sigmoid(x), twice
    return state(x=x)


def _two_networks(summed: bool):
    torch.manual_seed(0)
    net1, net2 = nn.Linear(6, 4), nn.Linear(4, 2)
    x, t1, t2 = torch.randn(5, 6), torch.randn(5, 4), torch.randn(5, 2)
    h = net1(x)
    g1 = torch.autograd.grad(F.mse_loss(h, t1), list(net1.parameters()), retain_graph=True)
    loss2 = F.mse_loss(net2(h), t2)
    g2 = torch.autograd.grad(loss2, list(net1.parameters()) + list(net2.parameters()))
    set_grads(net1, [a + b for a, b in zip(g1, g2[:2])] if summed else g1)
    set_grads(net2, g2[2:])
    return state(net1=net1, net2=net2)


REFERENCES = {
    "backward_twice": (["w"], [ref_backward_twice, ref_backward_twice]),
    "backward_twice_closure": (["model"], [ref_closure]),
    "modified_in_place": (["net"], [ref_modified_in_place]),
    "accumulated_loss": (["model", "total"], [ref_accumulated_loss]),
    "accumulated_loss_augmented": (["w", "total"], [ref_accumulated_augmented]),
    "hidden_state_tensor": (["cell"], [ref_hidden_tensor]),
    "hidden_state_tuple": (["lstm", "head"], [ref_hidden_tuple]),
    "hidden_state_attribute": (["model"], [ref_hidden_attribute]),
    "hidden_state_dict": (["cell"], [ref_hidden_dict]),
    "hidden_state_nested": (["low", "high"], [ref_hidden_nested]),
    "module_state": (["model"], [ref_module_state]),
    "kept_value": (["model"], [ref_kept_value]),
    "outside_loop": (["encoder", "head"], [lambda: _outside(True), lambda: _outside(False)]),
    "shared_trunk": (["trunk", "reg", "cls"], [_trunk, _trunk]),
    "growing_buffer": (["policy"], [ref_growing_buffer]),
    "gan_discriminator": (["G", "D"], [ref_gan]),
    "grad_then_backward": (["net", "x"], [ref_grad_then_backward, ref_grad_then_backward]),
    "higher_order_penalty": (["net", "x"], [ref_penalty]),
    "higher_order_again": (["net", "x"], [ref_again]),
    "meta_learning": (["model"], [lambda: _meta(True), lambda: _meta(False)]),
    "checkpoint": (["stem", "block", "head"], [ref_checkpoint, ref_checkpoint]),
    "custom_function": (["x"], [ref_custom_function, ref_custom_function]),
    "two_networks": (["net1", "net2"], [lambda: _two_networks(False),
                                        lambda: _two_networks(True)]),
}


REFERENCES.update(INPLACE_REFERENCES)
REFERENCES["outside_loop_closure"] = (["model"], [ref_closure])  # the forward moved inside


def observed(namespace: dict, names: list[str]) -> dict:
    return state(**{n: namespace[n] for n in names})


# Patterns with no fix to execute, and why. Each is checked below to offer no edit at all.
NO_FIX = {"unknown": "named when the evidence shows none of the patterns: there is no fix to "
                     "run, only the debugging page's way of looking"}


def test_every_pattern_has_a_proof_program_and_a_reference():
    for key, pattern in PATTERNS.items():
        if key in NO_FIX:
            continue
        assert pattern.rule is not None, f"{key} has no edit rule"
        assert pattern.proofs, f"{key} has no proof program"
        for name in pattern.proofs:
            assert program(name).exists(), f"{key}: {program(name)} is missing"
            assert name in REFERENCES, f"{key}: {name} has no reference gradient"
    programs = {p.stem for p in PROOFS.glob("*.py")} - {"conftest"}
    assert not programs & FROM_SCRIPTS.keys(), "a proof program kept in two places"
    assert {name for _, name in ALL} == set(REFERENCES) == programs | FROM_SCRIPTS.keys()


@pytest.mark.parametrize("key", sorted(NO_FIX))
def test_a_pattern_without_a_fix_offers_no_edit(key):
    """No rule, no proof program, and no edit whatever the carriers (the command then prints no
    diff: tests/command/fixes/test_edits.py checks it on a program diagnosed so)."""
    pattern = PATTERNS[key]
    assert pattern.rule is None and pattern.proofs == ()
    assert pattern.fixes([], None) == []
    assert pattern.links() and pattern.fix


@pytest.mark.parametrize("key, name", ALL, ids=[name for _, name in ALL])
def test_the_pattern_s_edit_runs_clean_and_gives_the_reference_gradient(key, name, tmp_path):
    path = program(name)
    finding, failed = diagnosed(path)
    assert finding.pattern is not None and finding.pattern.key == key
    fixes = PATTERNS[key].fixes(finding.carriers, failed)
    names, references = REFERENCES[name]
    assert fixes, f"no edit derived for {name}"
    assert len(fixes) >= len(references)
    for fix, reference in zip(fixes, references):
        assert fix.computes
        namespace = run_fixed(path, fix.edits, tmp_path)  # (a) no error
        close(observed(namespace, names), reference())  # (b) the reference gradient
