"""The carrier search on programs of every failure class of issue 23 (tests/scripts/carrier_*.py).

Each script fails with the freed-graph (or in-place) error and says, in comments, what the
command must find: `# enters: NAME` on the line where the carrier enters the failing step (none:
no variable holds the old graph by name), `# page: PAGE` the book page of the pattern, `# not:
NAMES` names that must not be listed (assigned in the step before they are read), `# form: F`
the form of what the first carrier's name holds. One Python process runs them all.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import autograd_lens as al
from autograd_lens.explain.carrier import Carrier
from autograd_lens.predict.report import PATTERNS
from autograd_lens.predict.verdict import Evidence, Suspected, decide
from places import TESTS

SCRIPTS = TESTS / "scripts"
CARRIER_SCRIPTS = sorted(SCRIPTS.glob("carrier_*.py"))

DRIVER = """
import contextlib, io, json, os, runpy, sys
from autograd_lens.run.watch import Watch
results = {}
for path in sys.argv[1:]:
    watch = Watch()
    os.chdir(os.path.dirname(path))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            with watch:
                runpy.run_path(path, run_name="__main__")
            error = None
        except RuntimeError as caught:
            error = str(caught).splitlines()[0]
    finding = watch.finding
    results[os.path.basename(path)] = None if finding is None else {
        "error": error, "pattern": finding.pattern.key, "page": finding.page,
        "text": str(finding),
        "carriers": [dict(c.as_dict(), form=c.form, kind=c.kind) for c in finding.carriers]}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def findings():
    done = subprocess.run([sys.executable, "-c", DRIVER, *map(str, CARRIER_SCRIPTS)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def expectations(script: Path) -> dict:
    found = {"enters": None, "line": None, "page": None, "not": [], "form": None}
    for number, line in enumerate(script.read_text().splitlines(), 1):
        for key in ("enters", "page", "not", "form"):
            match = re.search(rf"# {key}: (.+)$", line)
            if match:
                found[key] = match.group(1).split() if key == "not" else match.group(1).strip()
                if key == "enters":
                    found["line"] = number
    return found


@pytest.mark.parametrize("script", CARRIER_SCRIPTS, ids=lambda p: p.stem)
def test_each_class_names_its_carrier_first_and_its_page(findings, script):
    want = expectations(script)
    finding = findings[script.name]
    assert finding is not None, "the failure was not explained"
    assert finding["error"].startswith(("Trying to backward", "one of the variables needed"))
    names = [(c["name"], c["line"]) for c in finding["carriers"]]
    if want["enters"] is None:
        assert names == [], finding["text"]
    else:
        assert names[:1] == [(want["enters"], want["line"])], finding["text"]
    assert finding["page"].endswith(f"/{want['page']}.html"), finding["text"]
    listed = {name.split("[")[0] for name, _ in names}
    assert not listed & set(want["not"]), finding["text"]
    if want["form"]:
        assert finding["carriers"][0]["form"] == want["form"]


def test_no_carrier_is_said_to_be_read_before_it_is_assigned_when_it_is_not(findings):
    for name, finding in findings.items():
        for carrier in finding["carriers"]:
            if "read here before it is assigned" in carrier["why"]:
                line = (SCRIPTS / name).read_text().splitlines()[carrier["line"] - 1]
                assert re.search(rf"\b{re.escape(carrier['name'].split('[')[0])}\b", line), \
                    (name, carrier)


def test_without_evidence_the_command_says_so_and_links_the_debugging_page(findings):
    finding = findings["carrier_cached_by_lru.py"]
    assert finding["pattern"] == "unknown" and finding["page"].endswith("/chapters/debugging.html")
    assert "none that the evidence shows" in finding["text"]
    assert "h = h.detach()" not in finding["text"]


# ---------------------------------------------------------------------------------------------
# One evidence, one catalogue


def _meta_learning_step():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    params = dict(model.named_parameters())
    x, y = torch.randn(10, 3), torch.randn(10, 1)

    def task_loss(weights):
        return ((torch.func.functional_call(model, weights, (x,)) - y) ** 2).mean()

    inner = task_loss(params)
    grads = torch.autograd.grad(inner, list(params.values()))
    adapted = {k: w - 0.1 * g for (k, w), g in zip(params.items(), grads)}
    return task_loss(adapted) + 0.1 * inner


def test_diagnose_and_diagnose_on_error_name_meta_learning_as_the_command_does():
    with al.diagnose_on_error():
        outer = _meta_learning_step()
        assert al.diagnose(outer).pattern.key == "meta_learning"
        with pytest.raises(RuntimeError) as caught:
            outer.backward()
    text = str(caught.value)
    assert "20_meta_learning.html" in text and "05_rnn_hidden_state" not in text


def test_every_decided_pattern_is_in_the_catalogue():
    carriers = [None, Suspected("old", "variable", "", True), Suspected("carried", "list"),
                Suspected("carried", "attribute"), Suspected("old", "attribute", "accumulate")]
    for carrier in carriers:
        for flags in ({}, {"root_old": True}, {"same_step": True}, {"accumulating": True},
                      {"recurrence": True}, {"inplace": True}, {"disjoint": True}):
            assert decide(Evidence(carrier=carrier, **flags)) in PATTERNS


def test_a_carrier_records_the_form_of_what_its_name_holds():
    fields = {f for f in Carrier.__dataclass_fields__}
    assert {"name", "file", "line", "function", "why", "kind", "origin", "update",
            "outside_loop", "form"} <= fields
