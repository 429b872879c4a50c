"""An autoencoder trained by one optimizer whose encoder also reads back what its decoder made,
its consistency loss backpropagated before the reconstruction loss of the same forward. In the
graph it looks like a critic's step (the encoder takes both the data and what other weights, the
decoder's, made), but one optimizer updates both: two losses over one forward, whose page and
fix (one backward of the summed losses) the command gives. The fix trains as by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_autoencoder_reencodes_its_output.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("reencoded"))[NAME]


def test_the_page_of_two_losses_over_one_forward(run):
    report = run["report"]
    assert report["page"].endswith("/02_two_losses_one_forward.html"), run["text"][-1500:]
    assert report["carriers"][0]["name"] == "rebuilt"
    assert report["verdict"] == "gone"
    assert (marked(NAME, "fails"), ["    (consistency + reconstruction).backward()  # fails"]) in \
        [(e["line"], e["new"]) for e in report["edits"]]


def by_hand() -> dict:
    torch.manual_seed(0)
    encode = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3))
    decode = nn.Sequential(nn.Linear(3, 10), nn.Tanh(), nn.Linear(10, 6))
    judge = nn.Linear(6, 2)
    opt = torch.optim.Adam([*encode.parameters(), *decode.parameters()], lr=1e-2)
    data = torch.randn(40, 6)
    for start in range(0, 40, 10):
        x = data[start:start + 10]
        code = encode(x)
        rebuilt = decode(code)
        opt.zero_grad()
        (F.mse_loss(encode(rebuilt), code) + judge(rebuilt).pow(2).mean()
         + F.mse_loss(rebuilt, x)).backward()
        opt.step()
    return {"encode.0.weight": encode[0].weight, "decode.2.weight": decode[2].weight,
            "judge.weight": judge.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
