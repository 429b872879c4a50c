"""The in-place error where no call passes ``inplace=True`` itself: a module's in-place mode was
turned on after the module was made (``layer.inplace = True`` in a loop over the layers), or is
passed on from a parameter of the builder whose default is ``True`` (``inplace=inplace``). The
edit turns the flag off where it is set (the assignment, the default), and the program trains as
the one written without it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import command_reports, marked, trains_as

NAME = "inplace_flags_turned_on_after_building.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("flag"))[NAME]


def test_the_writer_is_the_dropout_run_at_its_line(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("self.body[2]", marked(NAME, "write")), first


def by_hand() -> dict:
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Dropout(0.25), nn.Linear(12, 3))
    opt = torch.optim.SGD(body.parameters(), lr=0.1)
    for _ in range(2):
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        loss = nn.functional.cross_entropy(body(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.body.0.weight": body[0].weight, "model.body.3.weight": body[3].weight}


def test_the_edit_turns_the_flag_off_and_trains_as_by_hand(run, tmp_path):
    edits = run["report"]["edits"]
    assert [(e["line"], e["new"][0].strip()) for e in edits] == \
        [(marked(NAME, "flag"), "layer.inplace = False  # flag")], edits
    trains_as(NAME, run["report"], by_hand(), tmp_path)


DEFAULT = "inplace_flag_passed_on_from_a_default.py"


def default_by_hand() -> dict:
    torch.manual_seed(0)

    def block(width_in, width_out):
        return nn.Sequential(nn.Linear(width_in, width_out), nn.ELU(), nn.Dropout(0.3))

    encoder = nn.Sequential(block(6, 10), block(10, 10), nn.Linear(10, 1))
    opt = torch.optim.Adam(encoder.parameters(), lr=1e-2)
    for _ in range(2):
        x, y = torch.randn(12, 6), torch.randn(12, 1)
        loss = nn.functional.mse_loss(encoder(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"encoder.0.0.weight": encoder[0][0].weight, "encoder.1.0.weight": encoder[1][0].weight,
            "encoder.2.weight": encoder[2].weight}


def test_the_edit_turns_the_default_off_and_trains_as_by_hand(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    run = command_reports([DEFAULT], folder)[DEFAULT]
    assert run["report"]["carriers"][0]["line"] == marked(DEFAULT, "write")
    assert [(e["line"], e["new"][0].strip()) for e in run["report"]["edits"]] == \
        [(marked(DEFAULT, "default"),
          "def hidden_block(width_in, width_out, p=0.3, inplace=False):  # default")]
    trains_as(DEFAULT, run["report"], default_by_hand(), tmp_path)


NAMED = "inplace_dropout_module_on_a_named_output.py"


@pytest.fixture(scope="module")
def named_run(tmp_path_factory):
    return command_reports([NAMED], tmp_path_factory.mktemp("named"))[NAMED]


def test_the_module_that_wrote_is_named_as_the_one_run_not_the_tensor_it_wrote(named_run):
    """The write is said to run the module (`self.drop`), as recorded, with the line that made
    it, and the carrier is the tensor it wrote (`h`), at the line that ran the module: never `h`
    said to be a Dropout."""
    text, line, made = named_run["text"], marked(NAMED, "write"), marked(NAMED, "made")
    assert (f"which runs `self.drop` (a Dropout made at {NAMED}:{made}: `self.drop = "
            "nn.Dropout(0.2, inplace=True)`), whose forward wrote it in place.") in text, text
    assert "runs `h`" not in text, text
    assert f"`self.drop` (made at {NAMED}:{made}), run at {NAMED}:{line}, wrote in place" in text, \
        text
    first = named_run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("h", line), first
    assert "is written in place here after SigmoidBackward0 saved it" in first["why"], first
    assert first["made"]["line"] == made, first
    edits = named_run["report"]["edits"]
    assert [(e["line"], e["new"][0].strip()) for e in edits] == \
        [(marked(NAMED, "made"), "self.drop = nn.Dropout(0.2, inplace=False)  # made")], edits


def named_by_hand() -> dict:
    torch.manual_seed(0)
    fc, out = nn.Linear(10, 10), nn.Linear(10, 1)
    drop = nn.Dropout(0.2)
    opt = torch.optim.Adam([*fc.parameters(), *out.parameters()], lr=1e-2)
    for _ in range(3):
        x = torch.randn(16, 10)
        loss = out(drop(torch.sigmoid(fc(x)))).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"net.0.fc.weight": fc.weight, "net.1.weight": out.weight}


def test_the_flag_turned_off_where_the_module_is_made_trains_as_by_hand(named_run, tmp_path):
    trains_as(NAMED, named_run["report"], named_by_hand(), tmp_path)
