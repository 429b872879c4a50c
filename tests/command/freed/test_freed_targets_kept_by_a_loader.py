"""A tensor that a statement of the script makes under a plain name (``Y = X @ true_w``) and
hands to an object that keeps it as an attribute (``loader.Y``, read as ``self.Y`` by a method
of that object): it is named at the making statement by the name that statement assigns, the
one the reader sees there, not by the object's attribute."""

from __future__ import annotations

from command_runs import command_reports, marked

NAME = "freed_targets_kept_by_a_loader.py"


def test_the_carrier_is_named_as_the_making_statement_assigns_it(tmp_path):
    run = command_reports([NAME], tmp_path)[NAME]
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("Y", marked(NAME, "made")), first
    assert (first["enters"]["name"], first["enters"]["line"]) == ("self.Y", marked(NAME, "enters"))
