"""State kept on objects that the loop picks in turn (``rig = rigs[step % 2]``) and writes
back through that alias, read again on a later visit:

* the carrier is named as the statement that made or kept it writes it (``rig.pose``, not the
  recorded path ``rigs[0].pose``), at that statement;
* the value that the recording shows entering the failing graph from before the freeing call
  comes first (the statement that made a node of this step from an older node reads it); a
  value this step made from it (``rig.view``, recorded made after that call) is not listed;
* a pattern guessed from the source as "computed outside the loop" is not said when the
  recording shows the freed node made by an earlier pass of the failing call's loop;
* the edit detaches the state of whichever object the step picked, and trains as a loop
  written by hand that keeps each pose without its graph.
"""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

POSE = "freed_pose_kept_on_a_picked_object.py"
OFFSET = "freed_state_written_back_through_an_alias.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([POSE, OFFSET], tmp_path_factory.mktemp("picked"))


@pytest.mark.parametrize("name, carrier, mark", [(POSE, "rig.pose", "made"),
                                                 (OFFSET, "sensor.offset", "kept")])
def test_named_as_written_where_it_got_the_graph(runs, name, carrier, mark):
    first = runs[name]["report"]["carriers"][0]
    assert (first["name"], first["line"]) == (carrier, marked(name, mark)), runs[name]["text"]


def test_the_value_made_from_it_in_this_step_is_not_a_carrier(runs):
    run = runs[POSE]
    names = [c["name"] for c in run["report"]["carriers"]]
    assert names[0] == "rig.pose" and "rig.view" not in names, run["text"]


def test_made_by_the_loop_is_not_said_computed_outside_it(runs):
    report = runs[POSE]["report"]
    assert report["pattern"] == "module_state", runs[POSE]["text"]
    assert report["page"].endswith("/16_module_state_with_history.html")
    assert "outside the loop" not in runs[POSE]["text"]


def _poses_by_hand() -> torch.Tensor:
    """The pose script's loop with each adjusted pose kept without its graph."""
    torch.manual_seed(0)
    lens = torch.eye(3) * 0.5
    poses = [torch.eye(3) + 0.1 * torch.randn(3, 3) for _ in range(2)]
    views = [p @ lens for p in poses]
    corrector = torch.nn.Embedding(2, 9)
    torch.nn.init.normal_(corrector.weight, std=0.01)
    optimizer = torch.optim.SGD(corrector.parameters(), lr=0.05)
    points, observed = torch.randn(5, 3), torch.randn(5, 3)
    for step in range(4):
        i = step % 2
        adjusted = poses[i].inverse() + corrector(torch.tensor(i)).view(3, 3)
        poses[i] = adjusted.inverse().detach()
        views[i] = adjusted.inverse() @ lens
        loss = (observed - points @ views[i]).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return corrector.weight


def _offsets_by_hand() -> torch.Tensor:
    """The offset script's loop with each corrected offset read without its graph."""
    torch.manual_seed(0)
    offsets = [torch.randn(4) for _ in range(2)]
    adjuster = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(adjuster.parameters(), lr=0.05)
    reading = torch.randn(4)
    for step in range(4):
        corrected = adjuster(offsets[step % 2].detach())
        offsets[step % 2] = corrected
        loss = (reading - corrected).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return adjuster.weight


@pytest.mark.parametrize("name, path, by_hand", [(POSE, "corrector.weight", _poses_by_hand),
                                                 (OFFSET, "adjuster.weight", _offsets_by_hand)])
def test_the_fix_runs_and_trains_as_by_hand(runs, tmp_path, name, path, by_hand):
    report = runs[name]["report"]
    assert report["verdict"] == "gone", runs[name]["text"]
    trains_as(name, report, {path: by_hand()}, tmp_path)
