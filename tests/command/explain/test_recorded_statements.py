"""Every statement the command prints about what happened (a write, a step, a loop, an earlier
backward call, the tensor's name) is checked against the replay's recording, and the recording
against the program's own lines (each script marks them with a comment: ``# built`` on the line
that builds the node whose saved tensor goes stale, ``# write`` on the write, ``# freed`` on the
backward call that freed it, ``# fails`` on the failing call)."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from command_runs import SCRIPTS, command_reports, marked, trains_as
from statements import diagnosis, unsupported

# script: (the error's kind, the optimizer steps that ran before the failing call)
CASES = {
    "inplace_probs_column_set_in_forward_beside_labels.py": ("modified", 0),
    "inplace_rows_written_in_forward_loop.py": ("modified", 0),
    "inplace_weight_stepped_between_two_backwards.py": ("modified", 1),
    "freed_weight_made_once_read_in_forward_loop.py": ("freed", 1),
    "fail_13_outside_loop.py": ("freed", 1),
    "inplace_dropout_writes_what_elu_saved.py": ("modified", 0),
    "inplace_slice_written_after_conv_saved_it.py": ("modified", 0),
    "inplace_embedding_renormed_after_weight_read.py": ("modified", 0),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return command_reports(list(CASES), tmp_path_factory.mktemp("recorded"))


@pytest.mark.parametrize("name", list(CASES))
def test_the_recording_is_what_the_program_did(runs, name):
    kind, steps = CASES[name]
    recorded = runs[name]["report"].get("recorded")
    assert recorded is not None, runs[name]["text"]
    assert recorded["kind"] == kind and recorded["at"]["line"] == marked(name, "fails")
    assert recorded["steps_before"] == steps == len(recorded["steps"])
    node = recorded["node"]
    assert node["built"]["user"]["line"] == marked(name, "built"), node
    if kind == "modified":
        assert recorded["write"]["user"]["line"] == marked(name, "write"), recorded["write"]
    else:
        assert node["freed_by"]["user"]["line"] == marked(name, "freed"), node


@pytest.mark.parametrize("name", list(CASES))
def test_every_statement_is_in_the_recording(runs, name):
    text, recorded = runs[name]["text"], runs[name]["report"].get("recorded")
    assert recorded is not None, text
    lines = diagnosis(text)
    write = recorded.get("write")
    assert unsupported(text, runs[name]["report"]) == []
    stepped = recorded["steps_before"] > 0 or (write or {}).get("in_step") is not None
    for line in lines:  # stricter than unsupported's: no step named at all, advice included
        if not stepped:
            assert not re.search(r"step\(\)|a weight|optimizer step(?!s ran)", line.replace(
                "0 optimizer steps", "")), line
    if recorded["kind"] == "freed":
        freed = recorded["node"]["freed_by"]
        assert any(f"backward call {freed['number']} at {name}:{freed['user']['line']}" in line
                   for line in lines), lines
    elif write.get("in_step") is not None:
        assert any("That write is optimizer step" in line for line in lines), lines
    else:
        assert any("0 backward calls and 0 optimizer steps ran" in line for line in lines), lines


@pytest.mark.parametrize("name", list(CASES))
def test_no_statement_contradicts_the_program(runs, name):
    """Checked against the script's own marks, with or without a recording: the write named is
    the marked write, a tensor said to be saved is one the written line writes, no step is
    said to have run where none did, no claim about a loop stands without a recording."""
    kind, steps = CASES[name]
    lines = diagnosis(runs[name]["text"])
    write = marked(name, "write")
    written = (SCRIPTS / name).read_text().splitlines()[write - 1] if write else ""
    for line in lines:
        if line.startswith("Changed by"):
            assert f"{name}:{write} in" in line, line
        for saved in re.findall(r"saved `([^`]+)`", line):
            assert saved.split(".")[-1] in written, (line, written)
        if not steps:
            assert not re.search(r"step\(\)|a weight|optimizer step(?!s ran)", line.replace(
                "0 optimizer steps", "")), line
        if "assigned only before the loop" in line:
            assert "a guess" in line, line


@pytest.mark.parametrize("name", [n for n, (kind, _) in CASES.items() if kind == "modified"])
def test_the_report_names_the_recorded_write_first(runs, name):
    """The in-place error's first entry in the report is the write the replay recorded, at its
    line, named as the script marks it (``# ... named: NAME``) where it does: the module whose
    forward wrote, the parameter below a module, the tensor the line writes."""
    first = runs[name]["report"]["carriers"][0]
    assert first["line"] == marked(name, "write"), runs[name]["text"]
    text = (SCRIPTS / name).read_text()
    named = re.search(r"named: (\S+)", text)
    if named:
        assert first["name"] == named.group(1), first


def _ref_dropout_out_of_place() -> dict:
    """The block with modules that do not write in place: what the edited program must train."""
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(5, 7), nn.ELU(), nn.Dropout(0.2), nn.Linear(7, 1))
    x = torch.randn(6, 5)
    block(x).pow(2).mean().backward()
    return {f"block.{k}.grad": p.grad for k, p in block.named_parameters()}


def _ref_slice_into_copy() -> dict:
    """The second channel set on a copy of the map that the convolution saved."""
    torch.manual_seed(0)
    stem, conv = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 2, 1)
    features = stem(torch.randn(2, 3, 6, 6))
    zeroed = torch.cat([torch.zeros_like(features[:, :1]), features[:, 1:]], dim=1)
    mixed = conv(zeroed)
    later = torch.cat([zeroed[:, :1], torch.ones_like(zeroed[:, 1:2]), zeroed[:, 2:]], dim=1)
    (mixed.mean() + later.mean()).backward()
    return {**{f"stem.{k}.grad": p.grad for k, p in stem.named_parameters()},
            **{f"conv.{k}.grad": p.grad for k, p in conv.named_parameters()}}


@pytest.mark.parametrize("name, reference", [
    ("inplace_dropout_writes_what_elu_saved.py", _ref_dropout_out_of_place),
    ("inplace_slice_written_after_conv_saved_it.py", _ref_slice_into_copy)])
def test_the_edit_from_the_recorded_write_trains_as_written_out_of_place(runs, name, reference,
                                                                         tmp_path):
    """The edit made from the recorded write (the module's inplace=True made False where the
    program makes it; a copy before the index write), applied and run, gives the gradients of
    the same computation written out of place by hand."""
    trains_as(name, runs[name]["report"], reference(), tmp_path)
