"""Losses of one forward backpropagated in turn from a temporary (``(w * loss).backward()``,
``scaler.scale(w * loss).backward()``), on programs of tests/scripts/f5_*.py. The earlier call's
root is gone at the failure, and the nodes of the second loss were made before that call: they
are not to be taken for old ones (a list kept across updates, with an edit that clears the list
inside the loop). The losses the loop's collection holds before the failing one tell which nodes
the earlier passes went through: the page of two losses over one forward, a tensor over the
shared part named (also when the shared part stays inside the model's forward), and two edits,
each run and compared with the program written by hand. A genuine buffer keeps its page, and the
watch keeps no tensor of the program alive.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograd_lens.run.watch import Watch
from command_runs import command_reports, entered, run_edited, value
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("f5_*.py"))
BUFFERS = [name for name in PROGRAMS if name.startswith("f5_buffer_")]  # kept across updates
IN_TURN = [name for name in PROGRAMS if name not in BUFFERS]  # losses of one forward
PAGES = "https://through-the-graph.github.io/through-the-graph-a-second-time/notebooks/"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS + ["fail_15_rl_buffer.py"], tmp_path_factory.mktemp("f5"))


@pytest.mark.parametrize("name", IN_TURN)
def test_losses_in_turn_are_two_losses_of_one_forward(name, reports):
    found = reports[name]
    report = found["report"]
    assert found["code"] == 1 and report["pattern"] == "shared_trunk", found["text"]
    assert report["page"] == PAGES + "02_two_losses_one_forward.html", found["text"]
    assert "kept across updates" not in found["text"], found["text"]
    # what the carrier named holds is the shared part the first backward went through
    assert all("[" not in c["name"] for c in report["carriers"]), found["text"]


@pytest.mark.parametrize("name", ["fail_15_rl_buffer.py"] + BUFFERS)
def test_a_buffer_kept_across_updates_keeps_its_page(name, reports):
    """Losses kept in a list across updates stay a buffer, also when a loop backpropagates
    them in turn from a temporary: the watch's kept root changes nothing there."""
    found = reports[name]
    assert found["report"]["pattern"] == "growing_buffer", found["text"]
    assert found["report"]["page"] == PAGES + "15_rl_buffers.html", found["text"]
    assert "Likely pattern: a list of tensors kept across updates" in found["text"]


def test_the_watch_keeps_no_tensor_alive():
    """After a backward from a temporary, what its graph saved and the leaf it reached die when
    the program lets go of them, as without the watch, whether the graph was kept or not."""
    with Watch():
        for keep in (False, True):
            w = torch.ones(3, requires_grad=True)
            leaf = weakref.ref(w)
            middle = w * 2
            gone = weakref.ref(middle)
            (middle * middle).sum().backward(retain_graph=keep)  # a temporary root
            del middle, w
            gc.collect()
            assert gone() is None and leaf() is None, keep


def ref_weighted(in_turn: bool) -> dict:
    """f5_weighted_losses_of_a_dict written by hand: one backward of the weighted sum, or each
    weighted loss backpropagated in turn with the graph kept."""
    torch.manual_seed(7)
    trunk = nn.Sequential(nn.Linear(6, 16), nn.Tanh())
    classify, regress = nn.Linear(16, 4), nn.Linear(16, 2)
    opt = torch.optim.Adam([*trunk.parameters(), *classify.parameters(),
                            *regress.parameters()], lr=0.01)
    data, kinds, targets = torch.randn(10, 6), torch.randint(0, 4, (10,)), torch.randn(10, 2)
    for _ in range(3):
        opt.zero_grad()
        features = trunk(data)
        cls = F.cross_entropy(classify(features), kinds)
        reg = F.smooth_l1_loss(regress(features), targets)
        if in_turn:
            cls.backward(retain_graph=True)
            (0.3 * reg).backward()
        else:
            (cls + 0.3 * reg).backward()
        opt.step()
    return {"trunk.0.weight": trunk[0].weight, "classify.weight": classify.weight,
            "regress.weight": regress.weight}


def ref_scaled(in_turn: bool) -> dict:
    """f5_scaled_task_losses_in_turn written by hand, likewise."""
    torch.manual_seed(11)
    encoder = nn.Sequential(nn.Linear(8, 20), nn.SiLU(), nn.Linear(20, 20), nn.SiLU())
    segment, count = nn.Linear(20, 5), nn.Linear(20, 1)
    opt = torch.optim.SGD([*encoder.parameters(), *segment.parameters(),
                           *count.parameters()], lr=0.05)
    scaler = torch.amp.GradScaler("cpu")
    pixels, classes, totals = torch.randn(12, 8), torch.randint(0, 5, (12,)), torch.rand(12, 1)
    for _ in range(2):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            code = encoder(pixels)
            seg = F.cross_entropy(segment(code).float(), classes)
            cnt = F.l1_loss(count(code).float(), totals)
        if in_turn:
            scaler.scale(0.7 * seg).backward(retain_graph=True)
            scaler.scale(0.3 * cnt).backward()
        else:
            scaler.scale(0.7 * seg + 0.3 * cnt).backward()
        scaler.step(opt)
        scaler.update()
    return {"encoder.0.weight": encoder[0].weight, "segment.weight": segment.weight,
            "count.weight": count.weight}


def ref_heads(in_turn: bool) -> dict:
    """f5_heads_inside_forward written by hand, likewise."""
    torch.manual_seed(3)
    body = nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU())
    left, right = nn.Linear(12, 2), nn.Linear(12, 1)
    opt = torch.optim.SGD([*body.parameters(), *left.parameters(), *right.parameters()], lr=0.1)
    x, side, size = torch.randn(9, 5), torch.randint(0, 2, (9,)), torch.randn(9, 1)
    for _ in range(2):
        opt.zero_grad()
        shared = body(x)
        first, second = F.cross_entropy(left(shared), side), F.mse_loss(right(shared), size)
        if in_turn:
            (first / 2).backward(retain_graph=True)
            (second / 2).backward()
        else:
            (0 + first / 2 + second / 2).backward()
        opt.step()
    return {"model.body.0.weight": body[0].weight, "model.body.2.weight": body[2].weight,
            "model.right.weight": right.weight}


def test_a_shared_part_inside_forward_is_named_by_what_it_computes(reports):
    """The shared part stays inside the model's forward: the head output computed over it, which
    the second loss reads, is named, as computed in this step from the freed graph."""
    found = reports["f5_heads_inside_forward.py"]
    first = found["report"]["carriers"][0]
    assert entered(first) == ("guess", 29), found["text"]
    assert first["line"] == 26, first  # where it got the graph: ``logits, guess = model(x)``
    assert ("is computed in this step from a graph that the backward at "
            "f5_heads_inside_forward.py:29 already went through") in first["why"], first


@pytest.mark.parametrize("name, reference", [("f5_weighted_losses_of_a_dict.py", ref_weighted),
                                             ("f5_scaled_task_losses_in_turn.py", ref_scaled),
                                             ("f5_heads_inside_forward.py", ref_heads)])
def test_each_printed_edit_trains_as_written_by_hand(name, reference, reports, tmp_path):
    """The summed backward, and the loop keeping the graph, each applied and run: the weights
    they train are those of the same program written by hand."""
    fixes = reports[name]["report"]["edits"], reports[name]["report"]["alternatives"]
    assert fixes[0] and len(fixes[1]) == 1, reports[name]["text"]
    for edits, in_turn in ((fixes[0], False), (fixes[1][0], True)):
        space = run_edited(name, edits, tmp_path)
        for path, want in reference(in_turn).items():
            assert torch.equal(value(space, path), want), (path, in_turn)


@pytest.mark.parametrize("reference, close", [(ref_weighted, 1e-6), (ref_scaled, 1e-4),
                                              (ref_heads, 1e-6)])
def test_losses_kept_in_turn_train_as_their_sum(reference, close):
    """What the second edit says: backpropagating in turn with the graph kept gives the
    gradients of one backward of the sum, up to round-off (of bfloat16 under autocast)."""
    in_turn, summed = reference(True), reference(False)
    for path, want in summed.items():
        assert torch.allclose(in_turn[path], want, rtol=0, atol=close), path
