"""Carriers kept in containers of the standard library, on programs of tests/scripts/n5_*.py,
each failing on the command as it was before them: a bounded ``collections.deque`` of recurrent
states whose newest entry starts the next chunk (read as ``memory[-1]`` inside a function the
loop calls), and a state kept as a namedtuple, whose detach must keep its fields. The command
names the entry as the step reads it, on the line where it enters
(``# enters: NAME`` in each script), and its edit, applied and run, trains as a hand-written
truncated backpropagation through time. Weights adapted by an inner gradient step taken with
``create_graph=True`` and scored on two query sets with a backward each get the meta-learning
page, not the page of a tensor computed outside the loop. A failure that only ``with`` blocks
see on its way out is said after Python's traceback, as one nothing catches; one that a ``with``
block swallows is still said, once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from command_runs import entered, command_reports, trains_as
from test_unseen_round4_carriers import expectations

SCRIPTS = Path(__file__).parent / "scripts"
ROUND5 = sorted(p.name for p in SCRIPTS.glob("n5_*.py"))
SAID = "autograd_lens: this backward reaches a graph that an earlier call already went through."
SWALLOWED = "n5_error_swallowed_by_a_with_block.py"  # ends normally: its with block swallows


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(ROUND5, tmp_path_factory.mktemp("n5"))


@pytest.mark.parametrize("name", ROUND5)
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


def run(script: str, command: bool = True) -> tuple[int, str, str]:
    prefix = [sys.executable, "-m", "autograd_lens", "--no-verify"] if command else [sys.executable]
    done = subprocess.run(prefix + [script], cwd=SCRIPTS, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_a_failure_inside_a_with_block_is_said_after_the_traceback():
    code, _, err = run("n5_backward_inside_a_timing_block.py")
    assert code == 1 and err.count(SAID) == 1, err
    assert err.index("RuntimeError: Trying to backward") < err.index(SAID), err


def test_a_failure_a_with_block_swallows_is_said_once():
    """Both failures the block swallows are said: the first in full, the second, at the same
    call, in one line; the program's output is its own."""
    code, out, err = run(SWALLOWED)
    assert (code, out) == run(SWALLOWED, command=False)[:2] == (0, "carried on\n")
    assert err.count(SAID) == 1, err
    assert f"the same error at {SWALLOWED}:16 again, 1 time so far" in err, err
