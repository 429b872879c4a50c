"""Recurrent states kept in a dict under each cell's name, handed on whole to the model, with a
backward once every three time steps inside an ``if`` of the loop over time: the dict is named
first (the list of this chunk's outputs is only computed from it), and the edit detaches every
entry once a chunk, after its update (not the one entry the recording names, which does not
exist before the first step; nor before every read, which would cut the graph between the
chunk's steps). The edited program trains as truncated backpropagation written by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_dict_of_states_chunked_backward.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("chunks"))[NAME]


def _by_hand() -> dict:
    torch.manual_seed(0)
    low = (torch.nn.Linear(2, 5), torch.nn.Linear(5, 5, bias=False))
    high = (torch.nn.Linear(5, 3), torch.nn.Linear(3, 3, bias=False))
    optimizer = torch.optim.SGD([p for m in (*low, *high) for p in m.parameters()], lr=0.05)
    xs, ys = torch.randn(9, 4, 2), torch.randn(9, 4, 3)
    s_low, s_high, outputs = torch.zeros(4, 5), torch.zeros(4, 3), []
    for t in range(9):
        s_low = torch.tanh(low[0](xs[t]) + low[1](s_low))
        s_high = torch.tanh(high[0](s_low) + high[1](s_high))
        outputs.append(s_high)
        if (t + 1) % 3 == 0:
            loss = (torch.stack(outputs) - ys[t - 2:t + 1]).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            outputs = []
            s_low, s_high = s_low.detach(), s_high.detach()
    return {"stack.cells.0.rec.weight": low[1].weight, "stack.cells.1.inp.weight": high[0].weight}


def test_the_dict_handed_on_is_named_first(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("states", marked(NAME, "read")), run["text"]


def test_every_entry_is_detached_once_a_chunk_and_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    edit = run["report"]["edits"][0]
    assert edit["line"] == marked(NAME, "chunk") and edit["new"][-1].strip() == \
        "states = {k: v.detach() for k, v in states.items()}", edit
    trains_as(NAME, run["report"], _by_hand(), tmp_path)


_CHUNKED = """\
for t in range(9):
    y, states = stack(xs[t], states)
    outputs.append(y)
    if (t + 1) % 3 == 0:
        loss = sum(outputs).sum()
        loss.backward()
        outputs = []
{last}
"""


@pytest.mark.parametrize("last, after", [("", 7), ("        continue", None),
                                         ("    else:\n        pass", None)])
def test_the_chunk_end_is_the_last_statement_of_the_backward_block(tmp_path, last, after):
    """In-process: the detach goes after the block's last statement; not after a jump that
    ends it (it would never run), nor where the block has an ``else``."""
    from autograd_lens.source.source_file import Source
    from autograd_lens.fixes.rules import Case
    from autograd_lens.fixes.detach_place import _chunk_end

    script = tmp_path / "chunks.py"
    script.write_text(_CHUNKED.format(last=last))
    source = Source.read(str(script))
    end = _chunk_end(source, source.statement_at(2), Case((), (str(script), 6)))
    assert (end.lineno if end is not None else None) == after
