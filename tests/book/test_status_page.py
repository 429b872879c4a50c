"""The status page is what ``scripts/bench.py`` writes from its stored report, and it says how
many runs each of its medians takes: the times are medians of ``BENCH_REPEATS`` runs, but the
library's ratios have their own count (``library_ratios``'s default), and so do the command's
costs (``bench_command.command_costs``, given ``WATCH_PAIRS``)."""

from __future__ import annotations

import inspect
import json

import bench
import bench_command
from places import REPOSITORY

ROOT = REPOSITORY

REPORT = json.loads((ROOT / "bench" / "report.json").read_text())


def test_the_page_is_what_bench_writes_from_its_report():
    assert bench.status_page(REPORT) == (ROOT / "chapters" / "status.md").read_text(), (
        "chapters/status.md differs from scripts/bench.py's status_page(bench/report.json): "
        "regenerate the page with `make bench`")


def test_the_page_says_how_many_runs_each_median_takes():
    page = bench.status_page(REPORT)
    library = inspect.signature(bench.library_ratios).parameters["repeats"].default
    assert library == bench.LIBRARY_REPEATS
    assert f"time is the median of {REPORT['repeats']} runs" in page
    assert f"each library ratio divides two medians of {library} runs" in page
    with_watch = {**REPORT, "library": {**REPORT["library"], "watch_added_us_per_call": 0.5,
                                        "passthrough_added_us_per_call": 0.125}}
    assert f"the command's costs are medians over {bench.WATCH_PAIRS} pairs of blocks of 20 " \
        "backward calls, plain and watched in turns" in bench.status_page(with_watch)
    assert "measured the same way, a wrapper that only passes each call on gives 0.12 us a call " \
        "(where nothing is added: the method's noise)" in bench.status_page(with_watch)
    assert "timed inside the watch, which the command enters once a program" in \
        bench.status_page(with_watch)
    alone = {**with_watch, "library": {**with_watch["library"], "watch_alone_us_per_call": 2.25,
                                       "passthrough_alone_us_per_call": -0.0625}}
    assert "wrapper that only passes each call on gives 0.12 us a call (where nothing is added: " \
        "the method's noise); timed call by call instead (each tiny call alone, one plain and " \
        f"one watched in turns, over {bench.WATCH_CALLS:,} pairs: steadier, but blind to what the " \
        "watch costs the code between calls), the watch adds 2.2 us a call and that wrapper " \
        "-0.062 us" in bench.status_page(alone)
    earlier = {**with_watch, "library": {k: v for k, v in with_watch["library"].items()
                                         if "_alone_" not in k}}  # a report made before them
    assert "timed call by call" not in bench.status_page(earlier)
    # The pairs bench passes are the ones command_costs takes unless told otherwise.
    assert inspect.signature(bench_command.command_costs).parameters["pairs"].default == bench.WATCH_PAIRS
    assert inspect.signature(bench_command.command_costs).parameters["calls"].default == bench.WATCH_CALLS


def test_the_lstm_line_renders_with_its_limit_and_how_it_was_measured():
    """``make bench`` reports the command's time beyond the program's own on the LSTM of
    ``scripts/bench_command.py`` (issue 39's line: at most 2 s) as a target row."""
    figure = {"value": 1.5, "limit": bench_command.LIMIT, "met": True}
    with_lstm = {**REPORT, "library": {**REPORT["library"], "lstm_command_extra_s": 1.5},
                 "targets": {**REPORT["targets"], "lstm_command_extra_s": figure}}
    page = bench.status_page(with_lstm)
    assert bench.TARGETS["lstm_command_extra_s"][1] == bench_command.LIMIT == 2.0
    assert (f"| {bench.TARGETS['lstm_command_extra_s'][0]} | 1.5 | 2 | yes | {REPORT['date']} |") in page
    assert (f"the command's time on the LSTM beyond the program's own is the median of "
            f"{REPORT['repeats']} differences") in page


def test_the_commands_figures_measured_alone_are_dated_and_the_rest_keep_their_date():
    """``bench.py --command`` measures only the command's figures: their targets say the day
    they were measured, every other target the day of the report it keeps."""
    figures = {"watch_added_us_per_call": 0.75, "passthrough_added_us_per_call": 0.1,
               "watch_adam_mlp_ratio": 1.02, "watch_entered_us": 18.0, "lstm_plain_s": 3.6,
               "lstm_command_s": 6.0, "lstm_command_extra_s": 2.4}
    report = bench.with_command_figures(REPORT, figures, "2099-01-02")
    page = bench.status_page(report)
    assert f"| {bench.TARGETS['watch_added_us_per_call'][0]} | 0.75 | 1 | yes | 2099-01-02 |" in page
    assert f"| {bench.TARGETS['watch_adam_mlp_ratio'][0]} | 1.02 | 1.01 | no | 2099-01-02 |" in page
    close = bench.with_command_figures(REPORT, {**figures, "watch_adam_mlp_ratio": 1.00427}, "2099-01-02")
    assert f"| {bench.TARGETS['watch_adam_mlp_ratio'][0]} | 1.004 | 1.01 | yes | 2099-01-02 |" in \
        bench.status_page(close)  # not "1", which reads as if it were the limit's own
    assert f"| {bench.TARGETS['lstm_command_extra_s'][0]} | 2.4 | 2 | no | 2099-01-02 |" in page
    kept = report["targets"]["make_test_s"]
    assert kept["value"] == REPORT["targets"]["make_test_s"]["value"]
    assert f"| {bench.TARGETS['make_test_s'][0]} | {kept['value']:.3g} | 180 | " in page
    assert page.count("2099-01-02") == 3
    assert f"on {REPORT['date']}, some targets again since (each target says its day)." in page
    whole = {**REPORT, "targets": {k: {**t, "date": REPORT["date"]} for k, t in REPORT["targets"].items()}}
    assert "some targets again since" not in bench.status_page(whole)  # one make bench: one day
    assert report["library"]["saved_tensors_vs_backward"] == REPORT["library"]["saved_tensors_vs_backward"]
