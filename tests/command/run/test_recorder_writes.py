"""The replay's recording of writes (``autograd_lens.run.record``): each write is kept with the
names the program holds the written tensor by, except a write that one call into ATen makes to a
tensor it made itself (``lstm_cell``'s kernel writes its gates in place), which nothing of the
program's can hold: kept, without the search for names."""

from __future__ import annotations

import pytest
import torch

from autograd_lens.run import record
from autograd_lens.run.record import Recording


@pytest.fixture
def searched(monkeypatch) -> list[str]:
    """The ops of the writes whose names were searched for (record's ``_names`` counted)."""
    ops: list[str] = []
    search = record._names

    def counted(frame, key):
        ops.append(frame.f_code.co_name)
        return search(frame, key)
    monkeypatch.setattr(record, "_names", counted)
    return ops


def recorded(program, tmp_path) -> list[tuple]:
    """The writes the recording keeps while ``program()`` runs (it does not fail)."""
    recording = Recording({"record": str(tmp_path / "record.json")})
    with recording:
        program()
    return recording.log.writes


def by_op(writes: list[tuple], op: str) -> list[tuple]:
    return [write for write in writes if write[4] == op]


def test_a_write_to_the_programs_own_tensor_is_named_each_time(tmp_path):
    def program():
        w = torch.ones(3, requires_grad=True)
        for _ in range(3):
            h = w * 2
            h.mul_(3)
    writes = by_op(recorded(program, tmp_path), "mul_.Tensor")
    assert [write[11] for write in writes] == [("h",)] * 3


def test_a_kernels_writes_to_its_own_temporaries_are_kept_without_names(tmp_path, searched):
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(4, 5)
    x = torch.randn(2, 4)

    def program():
        state = (torch.zeros(2, 5), torch.zeros(2, 5))
        for _ in range(2):
            state = cell(x, state)
    writes = recorded(program, tmp_path)
    inside = by_op(writes, "sigmoid_.default") + by_op(writes, "tanh_.default")
    # Three gates through sigmoid_ and one through tanh_ in each of the two calls: each write
    # kept, with its site, and no name (the gates are the kernel's own, never the program's).
    assert len(inside) == 8
    assert {write[11] for write in inside} == {()}
    assert all(write[5] == inside[0][5] for write in inside)  # at the program's line
    assert searched == []  # no search for the names of what only the kernel holds


def test_a_write_in_one_call_to_a_tensor_the_program_holds_is_named(tmp_path, searched):
    def program():
        w = torch.ones(3, requires_grad=True)
        h = w * 2
        for _ in range(2):
            torch.nn.functional.relu(h, inplace=True)  # a library's call that writes h
    writes = by_op(recorded(program, tmp_path), "relu_.default")
    assert [write[11] for write in writes] == [("h",)] * 2
    assert searched == ["program"] * 2
