"""The comparison's pieces: run selection, sort key, colors, windows."""

from __future__ import annotations

import re

import pytest

from visualizer.layout import PLOT_SIZE, window_for_group
from visualizer.panes.compare import (
    MAX_COMPARE,
    CompareDisplay,
    Selection,
    compile_runs,
    parse_sort_by,
    run_color,
    window_spec,
)
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.visdom_client import VisdomClient


def test_a_regex_that_does_not_compile_is_named_with_the_reason():
    with pytest.raises(ValueError, match=r"'\(' is not a regular expression: missing \)"):
        compile_runs("(")
    assert compile_runs("^lr-").search("lr-0.1")


def test_selection_searches_run_names():
    assert Selection().matches("anything")
    chosen = Selection("lr-0\\.0")
    assert [n for n in ("lr-0.01", "lr-0.1", "baseline") if chosen.matches(n)] == ["lr-0.01"]


@pytest.mark.parametrize(
    ("text", "key"),
    [("val/loss", ("val", "loss")), ("A/b/c", ("A", "b/c")), ("train_loss", ("", "train_loss"))],
)
def test_sort_by_takes_the_name_as_logged(text, key):
    assert parse_sort_by(text) == key


def test_sort_by_an_empty_name_is_refused():
    with pytest.raises(ValueError, match="empty: give a series' name as logged"):
        parse_sort_by("")


def test_run_colors_are_distinct_well_past_the_palette():
    colors = [run_color(i) for i in range(60)]
    assert len(set(colors)) == 60
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colors)


def test_a_comparison_window_per_series_placed_as_its_group_and_taller_with_more_runs():
    spec = window_spec(("val", "loss"), runs=2)
    assert (spec.win, spec.title, spec.ylabel) == ("compare_val_loss", "val/loss: all runs", "loss")
    assert spec.order == window_for_group("val").order
    assert window_spec(("val", "loss"), runs=40).height > spec.height >= PLOT_SIZE[1]


@pytest.mark.parametrize(
    ("value", "count"),
    [("7", 7), ("7.9", 7), ("0", 1), ("-3", 1), ("1e12", MAX_COMPARE), ("x", 20), ("nan", 20)],
)
def test_the_page_sets_how_many_runs_are_compared_within_bounds(value, count):
    client = VisdomClient(VisdomEndpoint.parse("127.0.0.1", 9))  # never asked here
    display = CompareDisplay(client, "sweep_compare", 1000, selection=Selection(count=20))
    event = {"event_type": "PropertyUpdate", "propertyId": 4, "value": value}
    assert display._changed(event).count == count
