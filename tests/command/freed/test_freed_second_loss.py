"""The freed-graph error of a second loss made from the same forward as the first and
backpropagated after it, each in an update method of its own (a helper that zeroes, backwards
and steps, run once per loss): the recording shows the failing loss built before the call that
freed its graph ran, and no step between them writing a weight it reaches. The carrier named
first is the name through which the first loss took in the shared part (not the failing loss,
which the freeing call never went through), the page is the one of two losses of one forward,
the fix keeps the first call's graph, and the alternative reads the shared part detached where
the first loss takes it in; each trains as the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import entered, marked, recorded_runs, trains_as

HELPER = "freed_second_loss_shared_update.py"
RETURNED = "freed_second_loss_returned.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([HELPER, RETURNED], tmp_path_factory.mktemp("second"))


@pytest.mark.parametrize("name", [HELPER, RETURNED])
def test_the_failing_loss_is_recorded_as_built_before_the_freeing_call(runs, name):
    recorded = runs[name]["report"]["recorded"]
    freed = recorded["node"]["freed_by"]
    assert freed["number"] == 1 and recorded["root"]["built"]["backward_calls"] == 0, recorded
    assert recorded["root"]["stepped"] is False and recorded["root"]["went"] is False


@pytest.mark.parametrize("name, carrier, line", [(HELPER, "cleaned", 25), (RETURNED, "sketch", 32)])
def test_the_shared_part_is_named_first_on_the_two_losses_page(runs, name, carrier, line):
    report = runs[name]["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == (carrier, line), report["carriers"]
    assert report["page"].endswith("/02_two_losses_one_forward.html"), report["page"]
    if name == RETURNED:  # given where the first loss takes it in
        assert entered(first) == (carrier, marked(name, "joins") + 1)


@pytest.mark.parametrize("name", [HELPER, RETURNED])
def test_the_fix_keeps_the_first_calls_graph_and_the_detach_is_an_alternative(runs, name):
    report = runs[name]["report"]
    assert report["verdict"] == "gone", runs[name]["text"][-1500:]
    fails, joins = marked(name, "fails"), marked(name, "joins")
    assert [(e["line"], e["new"]) for e in report["edits"]] == \
        [(fails, ["        loss.backward(retain_graph=True)  # fails"])]
    detached = [e for edits in report["alternatives"] for e in edits]
    joining = joins + (name == RETURNED)
    assert [e["line"] for e in detached] == [joining] and ".detach()" in detached[0]["new"][0]


def helper_by_hand() -> dict:
    torch.manual_seed(0)
    denoiser = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
    classifier = nn.Sequential(nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3))
    opt_d = torch.optim.Adam(denoiser.parameters(), lr=1e-2)
    opt_c = torch.optim.SGD(classifier.parameters(), lr=0.1)
    clean = torch.randn(24, 16)
    noisy = clean + 0.3 * torch.randn(24, 16)
    labels = torch.randint(0, 3, (24,))
    for _ in range(3):
        cleaned = denoiser(noisy)
        opt_c.zero_grad()
        F.cross_entropy(classifier(cleaned.detach()), labels).backward()
        opt_c.step()
        opt_d.zero_grad()
        F.mse_loss(cleaned, clean).backward()
        opt_d.step()
    return {"trainer.denoiser.0.weight": denoiser[0].weight,
            "trainer.classifier.2.weight": classifier[2].weight}


def returned_by_hand() -> dict:
    torch.manual_seed(0)
    nets = []
    for size_in, size_out in ((10, 6), (6, 4)):
        net = nn.Sequential(nn.Linear(size_in, 24), nn.GELU(), nn.Linear(24, size_out))
        nets.append((net, torch.optim.Adam(net.parameters(), lr=1e-2)))
    (coarse, opt_coarse), (fine, opt_fine) = nets
    inputs, middle, target = torch.randn(32, 10), torch.randn(32, 6), torch.randn(32, 4)
    for _ in range(3):
        out = coarse(inputs)
        opt_fine.zero_grad()
        F.smooth_l1_loss(fine(torch.tanh(out).detach()), target).backward()
        opt_fine.step()
        opt_coarse.zero_grad()
        F.smooth_l1_loss(out, middle).backward()
        opt_coarse.step()
    return {"coarse.net.0.weight": coarse[0].weight, "fine.net.2.weight": fine[2].weight}


@pytest.mark.parametrize("name, by_hand", [(HELPER, helper_by_hand), (RETURNED, returned_by_hand)])
def test_the_fix_trains_as_by_hand(runs, name, by_hand, tmp_path):
    trains_as(name, runs[name]["report"], by_hand(), tmp_path)
