"""The freed-graph error: a name that holds, at the failing call, a node whose saved tensors an
earlier backward freed (the node itself, not a later one computed from it) is named first when
each name the source's reading gave holds a node that backward did not go through: the losses
of a group computed before a temporary sum was backpropagated, or no name at all (a weight that a library's hook computed once). Said
where the recording shows it got that node (``# got``) and where it is held (``# held``), with
the backward call that freed it; no edit is derived from such a name."""

from __future__ import annotations

import pytest
import torch

from autograd_lens.explain.recorded_write import _written
from command_runs import command_reports, run_edited
from test_recorded_statements import diagnosis, marked

# script: (the name said first, its function, the names the source's reading gave, after it)
CASES = {
    "freed_scores_held_after_a_temporary_loss.py": ("hidden", "train_step", ["fit", "spread"]),
    "freed_weight_made_by_a_library_hook_once.py": ("layer.weight", "<module>", []),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return command_reports(list(CASES), tmp_path_factory.mktemp("held"))


@pytest.mark.parametrize("name", list(CASES))
def test_the_name_holding_a_freed_node_comes_first(runs, name):
    first, function, read = CASES[name]
    carriers = runs[name]["report"]["carriers"]
    assert (carriers[0]["name"], carriers[0]["function"]) == (first, function), carriers
    assert carriers[0]["enters"]["line"] == marked(name, "held")
    assert [c["name"] for c in carriers if c["name"] in read] == read  # kept, after it


@pytest.mark.parametrize("name", list(CASES))
def test_each_such_statement_is_in_the_recording(runs, name):
    """Every name said to hold a freed node does, as recorded: its node's number is one of the
    freed nodes, made by the line given, and the call said to have freed it did."""
    report = runs[name]["report"]
    recorded = report["recorded"]
    freed = set(recorded["freed_nodes"])
    by_name = {_written(h["name"]): h for h in recorded["holders"] + recorded["carrying"]}
    said = [c for c in report["carriers"] if "is itself one whose saved tensors" in c["why"]]
    assert said
    for carrier in said:
        holder = by_name[carrier["name"]]
        assert holder["number"] in freed
        frames = [holder["built"], *holder["callers"]]
        assert any(f["line"] == carrier["line"] for f in frames)
        number = recorded["node"]["freed_by"]["number"]
        line = recorded["node"]["freed_by"]["user"]["line"]
        assert f"backward call {number} at {name}:{line} freed" in carrier["why"]
        assert recorded["backwards"][number - 1]["line"] == line
    for read in CASES[name][2]:  # the source's carriers: nodes that call did not go through
        assert by_name[read]["went"] is False
    lines = diagnosis(runs[name]["text"])
    first = CASES[name][0]
    assert any(line.startswith(f"  {first}  {name}:{marked(name, 'got')} in ") for line in lines)
    assert f"{first}, made at {name}:{marked(name, 'got')} and held at " \
           f"{name}:{marked(name, 'held')}, holds a node of the graph" in runs[name]["text"]


def test_no_edit_comes_from_a_name_only_the_recording_gave(runs):
    """The hook's weight: no edit (the source shows no line to change); the two groups of
    losses: the edit of the source's reading (the first backward keeps its graph), which trains
    as one backward of both groups' sum."""
    assert runs["freed_weight_made_by_a_library_hook_once.py"]["report"]["edits"] == []
    name = "freed_scores_held_after_a_temporary_loss.py"
    report = runs[name]["report"]
    assert [line.strip() for e in report["edits"] for line in e["new"]] == \
        ["(scores.abs().mean() + 0.5 * scores.mean()).backward(retain_graph=True)"]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        space = run_edited(name, report["edits"], Path(folder))
    torch.manual_seed(0)
    body, head = torch.nn.Linear(4, 6), torch.nn.Linear(6, 3)
    weights = list(body.parameters()) + list(head.parameters())
    for _ in range(2):
        x = torch.randn(5, 4)
        hidden = torch.tanh(body(x))
        scores = head(hidden)
        both = scores.abs().mean() + 0.5 * scores.mean() + (scores - 1).pow(2).mean() + \
            hidden.var(0).sum()
        grads = torch.autograd.grad(both, weights)
        with torch.no_grad():
            for weight, grad in zip(weights, grads):
                weight -= 0.1 * grad
    for mine, theirs in zip(weights, list(space["body"].parameters()) +
                            list(space["head"].parameters())):
        torch.testing.assert_close(theirs.detach(), mine.detach())
