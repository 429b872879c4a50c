"""The write that ran after the save, or the variable that holds the old graph, named first, on
programs of tests/scripts/n6_*.py: a buffer written in place at two places (added to in a forward
before a node saves it, scaled by a method the loop calls between building the loss and its
backward), where only the second write can have moved the version past the saved one; a table
made once at module level and written row by row in the step function (its history reaches the
step before); a list kept by a module whose class a library made around the program's own (a
parametrization's class, as FSDP2's ``fully_shard`` makes one), which is still the program's
module; a dict of per-sample losses kept by index whose entries the failing batch read were
replaced since (the container that keeps such spent graphs is named, where a method reads it with
``.get``); an activation made with ``inplace=True`` by a helper, whose call inside a
``Sequential`` overwrote a tensor a loss saved (the line that makes it is named as the write).
The command names the write that ran after the save (``# write: NAME``) or the variable that
holds the old graph (``# enters: NAME``), and the edit it prints, applied and run, trains as the
program written by hand with that write out of place.
"""

from __future__ import annotations


import pytest
import torch
import torch.nn.functional as F
from torch import nn

from command_runs import entered, command_reports, run_edited, value
from script_marks import expectations
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("n6_*.py"))


WRITES = [n for n in PROGRAMS if "# write:" in (SCRIPTS / n).read_text()]


ENTERS = [n for n in PROGRAMS if "# enters:" in (SCRIPTS / n).read_text()]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS, tmp_path_factory.mktemp("n6"))


@pytest.mark.parametrize("name", WRITES)
def test_the_write_after_the_save_is_named(name, reports):
    want, found = expectations(SCRIPTS / name)["write"], reports[name]
    assert found["code"] == 1 and found["report"]["pattern"] == "written_in_place", found["text"]
    carriers = [entered(c) for c in found["report"]["carriers"]]
    assert carriers[:1] == [want], found["text"]
    written = (SCRIPTS / name).read_text().splitlines()[want[1] - 1].split("#")[0].strip()
    assert f"Changed by: {written}  (" in found["text"], found["text"]


@pytest.mark.parametrize("name", ENTERS)
def test_the_variable_that_holds_the_old_graph_is_named(name, reports):
    want, found = expectations(SCRIPTS / name)["enters"], reports[name]
    assert found["code"] == 1, found["text"]
    carriers = [entered(c) for c in found["report"]["carriers"]]
    assert carriers[:1] == [want], found["text"]
    assert "No variable of your program holds" not in found["text"], found["text"]


def test_a_global_the_function_only_writes_into_gets_no_detach(reports):
    """``table = table.detach()`` inside the function would make ``table`` a local name, read
    before it is bound: no edit, rather than one that fails."""
    found = reports["n6_global_table_filled_per_step.py"]
    assert found["report"]["edits"] == [], found["report"]["edits"]


def test_a_carrier_reason_names_the_tensor_and_quotes_the_write_as_a_write(reports):
    """A second carrier's reason says which saved tensor was changed (its name) and by which
    line (its source), never a line of source as if it were the tensor."""
    name = "n6_rows_renormed_before_backward.py"
    found = reports[name]
    want = expectations(SCRIPTS / name)["write"]
    written = (SCRIPTS / name).read_text().splitlines()[want[1] - 1].split("#")[0].strip()
    reasons = [c["why"] for c in found["report"]["carriers"][1:]]
    assert reasons, found["text"]
    for why in reasons:
        assert f"saved tensor `{want[0]}` was changed in place afterwards by `{written}` at " \
            f"{name}:{want[1]}" in why, why


def test_a_module_made_in_place_is_named_as_the_write(reports):
    """The write ran inside a module's forward (an activation made with ``inplace=True`` by a
    helper, called inside a ``Sequential``): the line that makes the module is named, and no
    line says that no variable holds the graph while the one above names the tensor. The
    replay records which module's forward wrote, so the edit makes it with ``inplace=False``
    there (its training is checked by hand below)."""
    name = "n6_stage_activation_in_place.py"
    found = reports[name]
    lines = (SCRIPTS / name).read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "# changed by" in text)
    written = lines[line - 1].split("#")[0].strip()
    assert f"Changed by: {written}  ({name}:{line} in activation), which makes a module" \
        in found["text"], found["text"]
    assert "saved `h`" in found["text"] and "No variable" not in found["text"], found["text"]
    edit, = found["report"]["edits"]
    assert (edit["line"], edit["new"]) == (line, [lines[line - 1].replace("inplace=True",
                                                                         "inplace=False")])


def ref_tally() -> dict:
    torch.manual_seed(0)
    head, tally = nn.Linear(4, 3), torch.ones(3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(6, 4), torch.randint(3, (6,))
        scores = head(x)
        tally = tally + scores.detach().softmax(-1).mean(0)
        loss = F.cross_entropy(scores / tally, y)
        tally = tally * 0.5
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.head.weight": head.weight, "model.tally": tally}


def ref_penalties() -> dict:
    torch.manual_seed(0)
    weight = nn.Parameter(torch.randn(4, 4) / 4)
    opt = torch.optim.SGD([weight], lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 4), torch.randn(8, 4)
        h = torch.tanh(x @ ((weight + weight.t()) / 2))
        loss = F.mse_loss(h, y) + 0.1 * h.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.parametrizations.weight.original": weight}


def ref_seen() -> dict:
    torch.manual_seed(0)
    net = nn.Linear(5, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    xs, ys = torch.randn(12, 5), torch.randint(2, (12,))
    seen = torch.ones(12)
    for _ in range(2):
        for start in range(0, 12, 4):
            idx = torch.arange(start, start + 4)
            per = F.cross_entropy(net(xs[idx]), ys[idx], reduction="none")
            loss = (torch.softmax(seen[idx], 0) * per).sum()
            seen[idx] = per.detach()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"model.net.weight": net.weight, "model.net.bias": net.bias}


def ref_stage_out_of_place() -> dict:
    """The two stages with an activation that makes a new tensor."""
    torch.manual_seed(0)
    first, second = nn.Linear(4, 6), nn.Sequential(nn.LeakyReLU(0.1), nn.Linear(6, 2))
    opt = torch.optim.SGD([*first.parameters(), *second.parameters()], lr=0.1)
    for _ in range(3):
        x, hint, y = torch.randn(5, 4), torch.randn(5, 6), torch.randn(5, 2)
        h = first(x)
        loss = F.smooth_l1_loss(h, hint) + F.mse_loss(second(h), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"first.weight": first.weight, "second.1.weight": second[1].weight}


REFERENCES = {"n6_stage_activation_in_place.py": ref_stage_out_of_place,
              "n6_tally_decayed_before_backward.py": ref_tally,
              "n6_seen_losses_by_index.py": ref_seen,
              "n6_parametrized_module_keeps_penalties.py": ref_penalties}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_the_edit_trains_as_written_by_hand(name, reports, tmp_path):
    space = run_edited(name, reports[name]["report"]["edits"], tmp_path)
    for path, want in REFERENCES[name]().items():
        torch.testing.assert_close(value(space, path), want)
