"""Edits that must run and train what the program meant, on programs of tests/scripts/e6_*.py: a
store read back by index or key (kept detached where it is stored, never emptied: the next lookup
would fail), a running value that starts as None in a defaultdict (a guarded detach), weights
stepped by hand and differentiated with autograd.grad (every entry made a leaf again where
stored), a snapshot of a network's output that the loop compares with (detached, not computed
again), a learned first state (detached where the next state is stored, so it still trains),
values passed in the same place to one function called twice (each detached, not the first
alone), and two gradients of one loss with a step between them (the step moved after the second,
not the loss built again: that would make simultaneous updates alternate).
Each edit, applied and run, gives the weights of an independent reference written here.
"""

from __future__ import annotations


import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import command_reports, trains_as
from places import TESTS

SCRIPTS = TESTS / "scripts"


def ref_cached_targets() -> dict:
    torch.manual_seed(0)
    scorer, learner = nn.Linear(4, 3), nn.Linear(4, 3)
    opt = torch.optim.SGD(learner.parameters(), lr=0.1)
    chunks = [torch.randn(5, 4) for _ in range(3)]
    with torch.no_grad():
        soft = [F.softmax(scorer(c), dim=1) for c in chunks]
    for _ in range(2):
        for i, c in enumerate(chunks):
            loss = F.kl_div(F.log_softmax(learner(c), dim=1), soft[i], reduction="batchmean")
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"learner.weight": learner.weight, "scorer.weight": scorer.weight}


def ref_outputs_by_id() -> dict:
    torch.manual_seed(0)
    net = nn.Linear(3, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(8, 3), torch.randn(8, 2)
    earlier = torch.zeros(8, 2)
    for rnd in range(3):
        for ids in torch.arange(8).split(4):
            out = net(x[ids])
            goal = y[ids] if rnd == 0 else 0.5 * y[ids] + 0.5 * earlier[ids]
            loss = F.mse_loss(out, goal)
            opt.zero_grad()
            loss.backward()
            opt.step()
            earlier[ids] = out.detach()
    return {"net.weight": net.weight, "net.bias": net.bias}


def ref_running_scale() -> dict:
    torch.manual_seed(0)
    net = nn.Linear(3, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scale = {}

    def scaled(name, loss):
        kept = scale.get(name)
        scale[name] = loss if kept is None else 0.8 * kept.detach() + 0.2 * loss
        return loss / scale[name]
    for _ in range(3):
        out = net(torch.randn(6, 3))
        loss = scaled("a", out[:, 0].pow(2).mean()) + scaled("b", (out[:, 1] - 1).abs().mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"net.weight": net.weight, "net.bias": net.bias}


def ref_stepped_weights() -> dict:
    torch.manual_seed(0)
    weights = [torch.randn(3, 2), torch.zeros(2)]
    log_step = torch.tensor(-2.0, requires_grad=True)
    opt = torch.optim.Adam([log_step], lr=0.05)

    def fit(ws, x, y):
        return ((x @ ws[0] + ws[1] - y) ** 2).mean()
    for _ in range(3):
        ws = [w.clone().requires_grad_() for w in weights]
        x, y = torch.randn(5, 3), torch.randn(5, 2)
        grads = torch.autograd.grad(fit(ws, x, y), ws, create_graph=True)
        stepped = [w - log_step.exp() * g for w, g in zip(ws, grads)]
        outer = fit(stepped, torch.randn(5, 3), torch.randn(5, 2))
        opt.zero_grad()
        outer.backward()
        opt.step()
        weights = [s.detach() for s in stepped]
    return {"log_step": log_step, "weights.0": weights[0], "weights.1": weights[1]}


def ref_old_scores() -> dict:
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, target = torch.randn(8, 4), torch.randn(8)
    for _ in range(2):
        with torch.no_grad():
            old = net(x).squeeze(1)
        for mb in torch.arange(8).split(4):
            now = net(x[mb]).squeeze(1)
            bounded = old[mb] + (now - old[mb]).clamp(-0.05, 0.05)
            loss = torch.max((now - target[mb]) ** 2, (bounded - target[mb]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"net.weight": net.weight, "net.bias": net.bias}


def ref_learned_start() -> dict:
    torch.manual_seed(0)
    cell = nn.GRUCell(3, 4)
    start = nn.Parameter(0.1 * torch.randn(1, 4))
    opt = torch.optim.SGD(list(cell.parameters()) + [start], lr=0.1)
    for _ in range(2):
        state = start.expand(2, -1)
        for _ in range(3):
            h = cell(torch.randn(2, 3), state)
            loss = F.mse_loss(h, torch.ones(2, 4))
            opt.zero_grad()
            loss.backward()
            opt.step()
            state = h.detach()
    return {"start": start, "cell.weight_hh": cell.weight_hh}


def ref_two_critics() -> dict:
    torch.manual_seed(0)
    dec_x, dec_y = nn.Linear(3, 4), nn.Linear(3, 4)
    crit_x, crit_y = nn.Linear(4, 1), nn.Linear(4, 1)
    opt_dec = torch.optim.SGD(list(dec_x.parameters()) + list(dec_y.parameters()), lr=0.1)
    opt_crit = torch.optim.SGD(list(crit_x.parameters()) + list(crit_y.parameters()), lr=0.1)
    for _ in range(3):
        z = torch.randn(5, 3)
        true_x, true_y = torch.randn(5, 4), torch.randn(5, 4)
        made_x, made_y = dec_x(z), dec_y(z)
        loss = F.softplus(-crit_x(made_x)).mean() + F.softplus(-crit_y(made_y)).mean()
        opt_dec.zero_grad()
        loss.backward()
        opt_dec.step()
        opt_crit.zero_grad()
        critics = (F.softplus(-crit_x(true_x)).mean() + F.softplus(crit_x(made_x.detach())).mean()
                   + F.softplus(-crit_y(true_y)).mean() + F.softplus(crit_y(made_y.detach())).mean())
        critics.backward()
        opt_crit.step()
    return {"dec_x.weight": dec_x.weight, "crit_x.weight": crit_x.weight,
            "crit_y.weight": crit_y.weight}


def ref_min_max() -> dict:
    torch.manual_seed(0)
    player, rival = nn.Linear(3, 3), nn.Linear(3, 3)
    opt_p = torch.optim.SGD(player.parameters(), lr=0.05)
    opt_r = torch.optim.SGD(rival.parameters(), lr=0.05)
    for _ in range(3):
        x = torch.randn(6, 3)
        loss = (player(x + torch.tanh(rival(x))) - x).pow(2).mean()
        params = [*player.parameters(), *rival.parameters()]
        both = torch.autograd.grad(loss, params)  # descent for the player, ascent for the rival
        for p, g in zip(params, both[:2] + tuple(-g for g in both[2:])):
            p.grad = g
        opt_p.step()
        opt_r.step()
    return {"player.weight": player.weight, "rival.weight": rival.weight}


EDITS = [("e6_targets_cached_then_read_by_index.py", ref_cached_targets),
         ("e6_min_max_one_loss_step_between.py", ref_min_max),
         ("e6_two_critics_one_helper.py", ref_two_critics),
         ("e6_last_outputs_by_id_next_round.py", ref_outputs_by_id),
         ("e6_running_scale_starts_as_none.py", ref_running_scale),
         ("e6_weights_stepped_by_hand.py", ref_stepped_weights),
         ("e6_old_scores_before_minibatches.py", ref_old_scores),
         ("e6_learned_first_state.py", ref_learned_start)]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(sorted(name for name, _ in EDITS), tmp_path_factory.mktemp("e6"))


@pytest.mark.parametrize("name, reference", EDITS, ids=[n for n, _ in EDITS])
def test_the_edit_trains_as_the_reference(name, reference, reports, tmp_path):
    trains_as(name, reports[name]["report"], reference(), tmp_path)


@pytest.mark.parametrize("name", ["e6_targets_cached_then_read_by_index.py",
                                  "e6_last_outputs_by_id_next_round.py"])
def test_a_store_read_back_by_key_is_not_emptied(name, reports):
    """Emptied after the update, the next lookup by index or key would fail."""
    found = reports[name]["report"]
    lines = [line for e in found["edits"] for line in e["new"]] + \
        [line for alt in found["alternatives"] for e in alt for line in e["new"]]
    assert lines and not any(".clear()" in line for line in lines), lines


def test_the_snapshot_is_not_computed_again_in_the_loop(reports):
    """Computed again inside the loop, the kept scores would be the loop's own: the bound that
    compares with them would never bind."""
    found = reports["e6_old_scores_before_minibatches.py"]["report"]
    assert found["alternatives"] == [], found["alternatives"]
