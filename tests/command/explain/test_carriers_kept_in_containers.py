"""Carriers kept in containers of the standard library, on programs of tests/scripts/n5_*.py: a
bounded ``collections.deque`` of recurrent states whose newest entry starts the next chunk (read
as ``memory[-1]`` inside a function the loop calls), and a state kept as a namedtuple, whose
detach must keep its fields. The command names the entry as the step reads it, on the line where
it enters (``# enters: NAME`` in each script, for every program of the set, also those whose
failure a ``with`` block sees), and its edit, applied and run, trains as a hand-written truncated
backpropagation through time. Weights adapted by an inner gradient step taken with
``create_graph=True`` and scored on two query sets with a backward each get the meta-learning
page, not the page of a tensor computed outside the loop, and no edit that would keep them as a
constant.
"""

from __future__ import annotations


import pytest
import torch
from torch import nn

from command_runs import entered, command_reports, trains_as
from script_marks import expectations
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("n5_*.py"))
SWALLOWED = "n5_error_swallowed_by_a_with_block.py"  # ends normally: its with block swallows


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS, tmp_path_factory.mktemp("n5"))


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_entry_read_comes_first_where_it_enters(name, reports):
    want, found = expectations(SCRIPTS / name)["enters"], reports[name]
    assert found["code"] == (0 if name == SWALLOWED else 1), found["text"]
    carriers = [entered(c) for c in found["report"]["carriers"]]
    assert carriers[:1] == [want], found["text"]


PAGES = {"n5_inner_step_two_query_backwards.py": "20_meta_learning"}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_page_of_the_situation(name, reports):
    found = reports[name]
    assert found["report"]["page"].endswith(f"/{PAGES[name]}.html"), found["text"]


def test_weights_adapted_by_an_inner_step_are_not_kept_as_a_constant(reports):
    """Detached, the adapted weights would send no gradient to the weights before the inner step:
    the outer optimizer would step nothing. No edit beats that one."""
    found = reports["n5_inner_step_two_query_backwards.py"]
    assert found["report"]["edits"] == [], found["text"]
    theta = torch.zeros(4, 1, requires_grad=True)
    xs = torch.randn(6, 4)
    (step,) = torch.autograd.grad((xs @ theta).pow(2).mean() + (xs @ theta).sum(), theta,
                                  create_graph=True)
    adapted = (theta - 0.2 * step).detach()  # the edit the rule would have written
    assert not adapted.requires_grad  # the outer step gets no gradient through it


def ref_gru_chunks() -> dict:
    """Each chunk starts from the newest state without its graph."""
    torch.manual_seed(0)
    chunk = 3
    gru, readout = nn.GRUCell(2, 5), nn.Linear(5, 2)
    optimizer = torch.optim.SGD([*gru.parameters(), *readout.parameters()], lr=0.05)
    signal = torch.randn(4 * chunk + 1, 1, 2)
    state = torch.zeros(1, 5)
    for start in range(0, 4 * chunk, chunk):
        frames, state, total = signal[start:start + chunk + 1], state.detach(), 0.0
        for t in range(chunk):
            state = gru(frames[t], state)
            total = total + (readout(state) - frames[t + 1]).pow(2).mean()
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
    return {"gru.weight_hh": gru.weight_hh, "readout.weight": readout.weight}


def ref_named_state() -> dict:
    """The state's tensors detached before each update, its fields kept."""
    torch.manual_seed(0)
    lstm, score = nn.LSTMCell(2, 4), nn.Linear(4, 1)
    optimizer = torch.optim.SGD([*lstm.parameters(), *score.parameters()], lr=0.1)
    h, c = torch.zeros(1, 4), torch.zeros(1, 4)
    for _ in range(4):
        h, c = lstm(torch.randn(1, 2), (h.detach(), c.detach()))
        loss = score(h).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"lstm.weight_hh": lstm.weight_hh, "score.weight": score.weight, "memory.h": h}


EDITS = [("n5_deque_of_gru_states.py", ref_gru_chunks),
         ("n5_state_as_a_namedtuple.py", ref_named_state)]


@pytest.mark.parametrize("name, reference", EDITS, ids=[n for n, _ in EDITS])
def test_the_edit_trains_as_the_reference(name, reference, reports, tmp_path):
    trains_as(name, reports[name]["report"], reference(), tmp_path)
