"""A module's recurrent state, read by its forward before it is stored again, with the training
loop in a function the model is handed to: at the failure the state is reached only through
that function's argument. It is named by the forward's own read (``self.state``), not set back
as "the caller's variable comes first" when no caller's name for it is found; its detach where
the forward reads it is the fix, run before it is printed, and trains as the program written by
hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_state_on_a_model_handed_to_train.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("handed"))[NAME]


def test_the_state_is_named_where_the_forward_reads_it(run):
    report = run["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("self.state", marked(NAME, "enters")), run["text"]
    assert report["verdict"] == "gone", run["text"][-2000:]
    assert [(e["line"], e["new"][0]) for e in report["edits"]] == [(
        marked(NAME, "enters"), "        self.state = tuple(s.detach() for s in self.state)")]


def by_hand() -> dict:
    torch.manual_seed(0)
    lstm, head = nn.LSTM(3, 5, batch_first=True), nn.Linear(5, 2)
    state = (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))
    batches = [(torch.randn(2, 4, 3), torch.randint(0, 2, (2, 4))) for _ in range(3)]
    optimizer = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
    for x, y in batches:
        out, state = lstm(x, tuple(s.detach() for s in state))
        loss = nn.functional.cross_entropy(head(out).reshape(-1, 2), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"tagger.lstm.weight_hh_l0": lstm.weight_hh_l0, "tagger.head.weight": head.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
