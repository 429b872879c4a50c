"""The carrier of the freed-graph error is named as the line the report gives writes it, and
that line is where the recording shows the name got the graph:

* a list filled by a method of the buffer object that holds it (``self.log_probs.append(...)``,
  the buffer kept as ``agent.memory``) is named ``self.log_probs`` at that line, not by the
  caller's path;
* a value an object's method made and kept on the object (``x = data.refresh()``), read back
  into a name later (``weights = data.weights``), is given at the line that reads it back;
* a cache of a helper object of the program's own class, kept on a model (``model.strategy``),
  is among the names the recording lists, and is given at the line of the helper's method
  that stores it;
* an attribute that no method of its object made (``scene.scale``), whose node a builder
  function made under the attribute's own name (``scale = ...``), is given at that statement,
  named ``scale``;
* an entry of a submodule's dict stored under a key the source computes
  (``self.cache[self.dataset] = embeds``) is listed among the recorded holders
  (``model.text.cache["ade"]``) and given at that store, named as it is written there.
"""

from __future__ import annotations

import pytest

from command_runs import marked, recorded_runs

PUT = "freed_log_probs_put_by_a_buffer_method.py"
KEPT = "freed_value_read_back_from_a_refreshed_object.py"
CACHED = "freed_cache_of_a_helper_object_on_a_model.py"
BUILT = "freed_attribute_made_by_a_builder_function.py"
KEYED = "freed_submodule_cache_under_a_computed_key.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([PUT, KEPT, CACHED, BUILT, KEYED], tmp_path_factory.mktemp("names"))


@pytest.mark.parametrize("name, carrier, mark", [
    (PUT, "self.log_probs", "put"), (KEPT, "weights", "kept"), (CACHED, "self._solved", "cached"),
    (BUILT, "scale", "made"), (KEYED, "self.cache[self.dataset]", "stored")])
def test_the_name_is_the_one_written_at_the_line_given(runs, name, carrier, mark):
    run = runs[name]
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == (carrier, marked(name, mark)), run["text"]
    assert f"  {carrier}  {name}:{marked(name, mark)} in " in run["text"]


@pytest.mark.parametrize("name, path", [
    (CACHED, "model.strategy._solved"), (KEYED, 'model.text.cache["ade"]')])
def test_the_cache_is_listed_as_held(runs, name, path):
    run = runs[name]
    held = {h["name"] for h in run["report"]["recorded"]["holders"]}
    assert path in held, run["text"]
