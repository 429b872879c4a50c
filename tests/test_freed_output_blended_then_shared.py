"""A name given a graph by one statement and then made again from its own value (``coarse =
net_a(x)``, then ``coarse = coarse * mask + target * (1 - mask)``): where the recorded call
chain of the node whose saved tensors were freed runs through the first statement, the carrier
is given there, where it got the graph that was freed, and the text says that the tensor it
holds now was made from that value by the second."""

from __future__ import annotations

from command_runs import command_reports, marked

NAME = "freed_output_blended_then_shared.py"


def test_the_name_is_given_where_it_got_the_freed_graph(tmp_path):
    run = command_reports([NAME], tmp_path)[NAME]
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("coarse", marked(NAME, "first")), first
    assert first["why"].startswith(
        "this statement gave it the graph that was freed (the node whose saved tensors were "
        "freed was made in its call, recorded in a replay); the tensor it holds now was made "
        "from that value by `coarse = coarse * mask + target * (1 - mask)` at "
        f"{NAME}:{marked(NAME, 'blended')}, and it "), first["why"]
