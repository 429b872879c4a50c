"""Of the recorded writes that could have moved the saved tensor's version (the first write
after the save takes a storage to the saved version plus one, its last to the version the
error reports), the one outside a backward is the write, before one that the engine made while
the failing backward ran: a gradient buffer can take the memory of a tensor the node's
operation made and then freed (its storage key, then, is among the node's own) and go through
the same versions. Seen once in a full test run, as a write "at" the failing backward's line;
held here on a log built by hand, so that it cannot depend on where the allocator puts a
buffer."""

from __future__ import annotations

from types import SimpleNamespace

from autograd_lens.run.write_evidence import _first_write


def _write(number: int, key: int, version: int, in_backward: bool) -> tuple:
    return (number, key, version, (4, 3), "div_" if not in_backward else "add_", 0, 0, 0, None,
            in_backward, False, (), "", ())


def test_the_write_outside_the_backward_is_chosen():
    own, freed_and_reused = 1000, 2000  # the node's output; its input's memory, reused
    # (the log keeps, for each node made, the sequence number after it: node 5, then 6)
    log = SimpleNamespace(made=[6], made_storages=[frozenset({freed_and_reused})], writes=[
        _write(6, own, 1, False), _write(7, own, 2, False),  # the program's two writes
        _write(9, freed_and_reused, 1, True), _write(9, freed_and_reused, 2, True)])
    facts = {"then": 0, "now": 2, "numel": 12}
    assert _first_write(log, facts, 5)[:3] == (6, own, 1)


def test_a_write_in_a_backward_is_chosen_when_it_is_the_only_one():
    log = SimpleNamespace(made=[6], made_storages=[frozenset()], writes=[
        _write(9, 3000, 1, True), _write(9, 3000, 2, True)])
    assert _first_write(log, {"then": 0, "now": 2, "numel": 12}, 5)[:3] == (9, 3000, 1)
