"""Regular expressions from the page or the command line are matched in linear time."""

from __future__ import annotations

import time

import pytest

from visualizer.api.filters import compile_filters
from visualizer.model.summary import RunSummary
from visualizer.panes.compare import Selection, compile_runs
from visualizer.panes.run_rows import TableView, select
from visualizer.patterns import is_pattern, searcher
from visualizer.sources.export import _selected

EVIL = "^(a+)+$"
NAMES = ["a" * (40 + i) + "!" for i in range(30)]  # re took 2.4 s for one of 22 characters


def _within_a_second(match) -> list[bool]:
    began = time.perf_counter()
    matched = [match(name) for name in NAMES]
    assert time.perf_counter() - began < 1.0  # the bound: Python's re took hours
    return matched


@pytest.mark.parametrize(
    "match",
    [
        lambda name: bool(select([RunSummary(name)], TableView(filter=EVIL), None, 0.0)),
        Selection(runs=EVIL).matches,
        compile_runs(EVIL),
        lambda name: compile_filters({"name": {"$regex": EVIL}})({"name": name}),
        lambda name: _selected([name], "^(a+)+!$", "root")[0],
    ],
    ids=["runs-table-filter", "comparison-runs", "--runs", "api-regex", "export-runs"],
)
def test_a_backtracking_pattern_over_long_names_answers_within_a_second(match):
    matched = _within_a_second(match)
    assert matched == [False] * 30 or matched == [True] * 30  # export's pattern takes the "!"


def test_what_re2_lacks_is_matched_as_plain_text():
    assert searcher(r"(a)\1")("x(a)\\1y") and not searcher(r"(a)\1")("aa")
    assert searcher("(?=lr)lr", ignore_case=True)("(?=LR)LR")
    assert searcher("^lr-")("lr-0.1") and not searcher("^lr-")("x-lr-")
    assert searcher("LR", ignore_case=True)("lr-1") and not searcher("LR")("lr-1")


def test_what_is_no_pattern_says_why():
    assert is_pattern("(") is not None and is_pattern("^a+$") is None
    with pytest.raises(ValueError, match="is not a regular expression"):
        compile_runs("(")


def test_the_empty_text_holds_every_name_without_a_search():
    assert searcher("")("any") and searcher("", ignore_case=True)("")
    assert searcher("") is searcher("", ignore_case=True)  # one test of no text, nothing compiled
