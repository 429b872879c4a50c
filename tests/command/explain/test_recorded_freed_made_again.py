"""The freed-graph error where a value made once before a loop carries the graph into every
pass (autograd_lens.explain.made_again.made_again_in_loop): the statement that the replay recorded
making it runs again at the top of the loop where it enters, when none of the names it reads is
recorded holding the freed graph. The command runs the edit before it calls it the fix; here it
is applied, run, and its weights compared with the program fixed by hand:

* a temperature made from a parameter before the steps (kept as a constant, that parameter
  would never be trained);
* one forward over a whole sequence whose positions are backwarded one by one (the forward
  made again for each position gives the gradients of one backward of the summed errors);
* a penalty that ``__init__`` computes once from ``self`` and keeps as an attribute, which the
  training method adds to every loss: computed again where that method reads it;
* scores made from features that also hold the freed graph: made again alone, they would read
  it back in, so they are made again only with the features before them (the whole chain).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import SCRIPTS, marked, recorded_runs, trains_as

TEMPERATURE = "freed_scale_made_from_a_parameter_before_the_loop.py"
POSITIONS = "freed_one_forward_backwarded_per_position.py"
KEPT = "freed_scores_made_from_kept_features.py"
ON_SELF = "freed_penalty_kept_on_self_by_init.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([TEMPERATURE, POSITIONS, KEPT, ON_SELF],
                         tmp_path_factory.mktemp("made_again"))


def _made_again(name: str, report: dict) -> None:
    """The printed fix is the recorded statement (the line marked ``made``) copied, as it is,
    above the first statement of the innermost loop around the line marked ``enters``."""
    assert report["verdict"] == "gone" and report["edits"], report
    made, enters = marked(name, "made"), marked(name, "enters")
    lines = SCRIPTS.joinpath(name).read_text().splitlines()
    loop = max(n for n in range(made + 1, enters) if lines[n - 1].lstrip().startswith("for "))
    (edit,) = report["edits"]
    assert edit["line"] == loop + 1, edit
    assert edit["new"][0].strip() == edit_text(name, made), edit
    assert edit["new"][1:] == [edit["old"]], edit
    assert report["recorded"]["node"]["freed_by"]["user"]["line"] == marked(name, "fails")


def edit_text(name: str, line: int) -> str:
    return SCRIPTS.joinpath(name).read_text().splitlines()[line - 1].split("#")[0].strip()


def test_the_temperature_is_made_again_in_each_step(runs):
    _made_again(TEMPERATURE, runs[TEMPERATURE]["report"])


def temperature_by_hand() -> dict:
    torch.manual_seed(0)

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(6, 3)
            self.raw_t = nn.Parameter(torch.zeros(()))

    net = Scaled()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(4):
        x, y = torch.randn(12, 6), torch.randint(0, 3, (12,))
        loss = F.cross_entropy(net.body(x) / (F.softplus(net.raw_t) + 0.1), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    return {"net.body.weight": net.body.weight, "net.raw_t": net.raw_t}


def test_the_temperature_edit_trains_it_as_by_hand(runs, tmp_path):
    reference = temperature_by_hand()
    assert reference["net.raw_t"].item() != 0.0  # by hand, the temperature is trained
    trains_as(TEMPERATURE, runs[TEMPERATURE]["report"], reference, tmp_path)


def test_the_sequence_forward_is_made_again_for_each_position(runs):
    _made_again(POSITIONS, runs[POSITIONS]["report"])


def positions_by_hand() -> dict:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 10), nn.Tanh(), nn.Linear(10, 1))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(3):
        seq = torch.randn(5, 3).cumsum(0)
        target = seq.sum(1, keepdim=True).sin()
        preds = net(seq)
        sum((preds[t] - target[t]).pow(2).mean() for t in range(len(seq))).backward()
        opt.step()
        opt.zero_grad()
    return {"net.0.weight": net[0].weight, "net.2.weight": net[2].weight}


def test_the_per_position_edit_trains_as_one_backward_of_the_sum(runs, tmp_path):
    trains_as(POSITIONS, runs[POSITIONS]["report"], positions_by_hand(), tmp_path)


def test_scores_read_from_kept_features_are_made_again_only_with_them(runs):
    report = runs[KEPT]["report"]
    assert "features" in {h["name"] for h in report["recorded"]["carrying"]}
    printed = [report["edits"]] + report["alternatives"] + \
        [a["edits"] for a in report["failed_attempts"]]
    made = edit_text(KEPT, marked(KEPT, "made"))
    features = edit_text(KEPT, marked(KEPT, "made") - 1)
    for edits in printed:
        for edit in edits:
            new = [n.strip() for n in edit["new"]]
            if edit["line"] > marked(KEPT, "made") and made in new:
                assert features in new[:new.index(made)], edit  # the chain, not scores alone


def test_the_kept_penalty_is_computed_again_where_it_is_read(runs):
    report = runs[ON_SELF]["report"]
    assert "self.penalty" in {h["name"] for h in report["recorded"]["holders"]}
    assert report["verdict"] == "gone", report
    (edit,) = report["edits"]
    assert edit["line"] == marked(ON_SELF, "enters"), edit
    assert edit["new"] == [edit["old"].replace("self.penalty", "self.decoder_decay()")], edit


def on_self_by_hand() -> dict:
    torch.manual_seed(0)
    enc, dec = nn.Linear(8, 3), nn.Linear(3, 8)
    opt = torch.optim.SGD(list(enc.parameters()) + list(dec.parameters()), lr=0.05)
    for batch in [torch.randn(16, 8) for _ in range(3)]:
        loss = (dec(enc(batch).tanh()) - batch).pow(2).mean() + 0.01 * dec.weight.pow(2).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return {"net.enc.weight": enc.weight, "net.dec.weight": dec.weight}


def test_the_kept_penalty_edit_trains_as_by_hand(runs, tmp_path):
    trains_as(ON_SELF, runs[ON_SELF]["report"], on_self_by_hand(), tmp_path)
