"""The comparison's pieces: run selection, sort key, colors, windows."""

from __future__ import annotations

import re

import numpy as np
import pytest

from visualizer.layout import PLOT_SIZE, window_for_group
from visualizer.model.rundata import RunData
from visualizer.model.series import Series
from visualizer.model.zoom import ZOOM_EVENT
from visualizer.panes.compare import (
    MAX_COMPARE,
    SMOOTHED_RUNS,
    CompareDisplay,
    Selection,
    compile_runs,
    parse_sort_by,
    run_color,
    series_title,
    window_spec,
)
from visualizer.panes.groups import group_runs
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.visdom_client import VisdomClient


def test_a_regex_that_does_not_compile_is_named_with_the_reason():
    with pytest.raises(ValueError, match=r"'\(' is not a regular expression: missing \)"):
        compile_runs("(")
    assert compile_runs("^lr-")("lr-0.1")


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
    title = "validation: loss (2 runs)"  # the count drawn, not "all runs": 20 of 10,000 are
    assert (spec.win, spec.title, spec.ylabel) == ("compare_val_loss", title, "loss")
    assert spec.order == window_for_group("val").order
    legend = window_spec(("val", "loss"), runs=SMOOTHED_RUNS)
    assert legend.height > spec.height >= PLOT_SIZE[1]
    assert legend.title == f"validation: loss ({SMOOTHED_RUNS} runs)"
    assert window_spec(("val", "loss"), runs=1).title == "validation: loss (1 run)"
    crowded = window_spec(("val", "loss"), runs=1000)
    assert (
        crowded.title == f"validation: loss (1,000 runs; past {SMOOTHED_RUNS}: raw, named on hover)"
    )
    assert crowded.height == PLOT_SIZE[1], "no legend to make room for"


@pytest.mark.parametrize(
    ("key", "title"),
    [
        (("lr", "lr"), "learning rate: lr"),  # was lr/lr, where the run's page says learning rate
        (("hparams", "hparam/accuracy"), "hparams: hparam/accuracy"),
        (("system", "cpu_percent"), "system: cpu_percent"),
        (("", "epoch"), "epoch"),
        (("", "val_loss"), "validation: val_loss"),
        (("A", "b"), "A: b"),
    ],
)
def test_a_comparison_window_is_titled_as_the_runs_page_names_its_series(key, title):
    assert series_title(key) == title
    assert window_spec(key, runs=2).title == f"{title} (2 runs)"


def test_a_comparison_of_percentages_reaches_down_to_zero_as_a_runs_page_does():
    assert window_spec(("system", "cpu_percent"), runs=2).from_zero
    assert not window_spec(("system", "rss_gib"), runs=2).from_zero


@pytest.mark.parametrize(
    ("value", "count"),
    [("7", 7), ("7.9", 7), ("0", 1), ("-3", 1), ("1e12", MAX_COMPARE), ("x", 20), ("nan", 20)],
)
def test_the_page_sets_how_many_runs_are_compared_within_bounds(value, count):
    client = VisdomClient(VisdomEndpoint.parse("127.0.0.1", 9))  # never asked here
    display = CompareDisplay(client, "sweep_compare", 1000, selection=Selection(count=20))
    event = {"event_type": "PropertyUpdate", "propertyId": 4, "value": value}
    assert display._changed(event).count == count


def noisy_runs(count: int, points: int) -> list[RunData]:
    """``count`` runs of ``points`` noisy train/loss values each (decimation keeps extremes)."""
    rng = np.random.default_rng(0)
    runs = []
    for i in range(count):
        run = RunData(f"run-{i:03d}")
        run.series[("train", "loss")] = series = Series()
        series.extend(range(points), rng.random(points).tolist())
        runs.append(run)
    return runs


def compared(display: CompareDisplay, runs: list[RunData], now: float) -> list[dict]:
    """The traces the comparison's train/loss window sends at ``now`` (committed as sent)."""
    windows = display._windows(runs, group_runs(runs, ""))
    (plan,) = display._plan_all(windows, now).values()
    display.plots[plan.msg["win"]].commit(plan, now, 0.01)
    return plan.msg["data"]


def test_many_compared_runs_draw_once_each_a_pair_every_other_column_and_a_zoom_every_point():
    client = VisdomClient(VisdomEndpoint.parse("127.0.0.1", 9))  # never asked here
    client.events.stop()  # no listener: this test files the page's zoom itself
    display = CompareDisplay(client, "sweep_compare", 10_000, selection=Selection(count=100))
    assert display.view.smoothing > 0
    runs = noisy_runs(100, 2000)
    traces = compared(display, runs, now=0.0)
    assert [t["name"] for t in traces] == [run.name for run in runs], "each run once, raw"
    assert all(t.get("meta") != "smoothed" for t in traces)
    assert all(len(t["x"]) <= PLOT_SIZE[0] // 2 for t in traces)
    values = runs[0].series[("train", "loss")].values()
    assert min(traces[0]["y"]) == values.min() and max(traces[0]["y"]) == values.max()
    zoom = {"event_type": ZOOM_EVENT, "range": [750, 999]}
    client.events.subscribe("sweep_compare", "compare_train_loss").put(zoom)
    traces = compared(display, runs, now=10.0)
    # Every stored point in the range, and the neighbours its line reaches the edges by.
    assert all(t["x"] == list(range(749, 1001)) for t in traces)
    assert traces[0]["y"] == values[749:1001].tolist()


def test_a_few_compared_runs_are_drawn_smoothed_over_their_raw_points():
    client = VisdomClient(VisdomEndpoint.parse("127.0.0.1", 9))  # never asked here
    client.events.stop()
    display = CompareDisplay(client, "sweep_compare", 10_000)
    traces = compared(display, noisy_runs(SMOOTHED_RUNS, 1000), now=0.0)
    assert [t.get("meta") for t in traces] == [None, "smoothed"] * SMOOTHED_RUNS
    assert all(len(t["x"]) == 1000 for t in traces), "fewer runs, more points each"
