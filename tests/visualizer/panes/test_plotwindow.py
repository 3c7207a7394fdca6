"""PlotWindow's choices, without a server: append small windows, redraw big ones at a bounded rate,
draw raw and smoothed traces, and the axes the view asks for."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from visualizer.layout import LINES_MODE, home_window, window_for_group
from visualizer.model.decimate import MIN_POINTS
from visualizer.model.series import Series
from visualizer.model.traces import faint
from visualizer.panes.plotmessage import Line, series_colors, trace_budget
from visualizer.panes.plotwindow import (
    APPEND_MAX_SHOWN,
    MIN_REDRAW_INTERVAL,
    REMOUNT_GAP,
    SPARSE_POINTS,
    PlotWindow,
)
from visualizer.panes.view import ViewSettings

RAW = ViewSettings(smoothing=0.0)  # one trace per series


def grown(series: Series, n: int, value: float = 1.0) -> Series:
    start = 0 if series.last_step is None else series.last_step + 1
    series.extend(range(start, start + n), [value] * n)
    return series


def test_small_windows_are_appended_to():
    window, loss = PlotWindow(window_for_group("train"), 2000, RAW), Series()
    plan = window.plan({"loss": Line(grown(loss, 10))}, "env", now=0.0)
    assert plan.route == "events" and plan.msg["data"][0]["x"] == list(range(10))
    window.commit(plan, 0.0, 0.01)
    plan = window.plan({"loss": Line(grown(loss, 5))}, "env", now=0.01)
    assert plan.route == "update" and plan.msg["append"] is True
    assert plan.msg["data"][0]["x"] == [10, 11, 12, 13, 14], "only the new points travel"
    window.commit(plan, 0.01, 0.01)
    assert window.plan({"loss": Line(loss)}, "env", now=0.02) is None, "nothing new, nothing sent"


def test_every_trace_is_in_an_append_in_server_order():
    window, a, b = (
        PlotWindow(window_for_group("train"), 2000, RAW),
        grown(Series(), 3),
        grown(Series(), 3),
    )
    window.commit(window.plan({"a": Line(a), "b": Line(b)}, "env", 0.0), 0.0, 0.01)
    plan = window.plan({"b": Line(grown(b, 2)), "a": Line(a)}, "env", 1.0)
    assert [t["name"] for t in plan.msg["data"]] == ["a", "b"] and plan.msg["data"][0]["x"] == []


def test_new_trace_or_rewind_redraws_at_once():
    window, loss = PlotWindow(window_for_group("train"), 2000, RAW), grown(Series(), 10)
    window.commit(window.plan({"loss": Line(loss)}, "env", 0.0), 0.0, 0.5)
    assert (
        window.plan({"loss": Line(loss), "aux": Line(grown(Series(), 1))}, "env", 0.0).route
        == "events"
    )
    loss.extend([3], [9.0])  # a resumed run logs step 3 again
    plan = window.plan({"loss": Line(loss)}, "env", 0.0)
    assert plan.route == "events" and plan.msg["data"][0]["y"][3] == 9.0


def test_big_windows_are_redrawn_decimated_and_throttled():
    window, loss = PlotWindow(window_for_group("train"), 1000, RAW), Series()
    loss.extend(range(50_000), np.sin(np.arange(50_000) / 100.0))
    plan = window.plan({"loss": Line(loss)}, "env", now=0.0)
    assert len(plan.msg["data"][0]["x"]) <= 1000 and plan.msg["data"][0]["x"][-1] == 49_999
    window.commit(plan, now=0.0, seconds=0.2)  # a slow redraw: the next waits 4x as long
    grown(loss, 3, value=5.0)
    assert window.plan({"loss": Line(loss)}, "env", now=0.5) is None and window.deferred
    assert window.plan({"loss": Line(loss)}, "env", now=0.5, force=True).route == "events"
    plan = window.plan({"loss": Line(loss)}, "env", now=0.81)
    assert plan.route == "events" and plan.msg["data"][0]["x"][-1] == 50_002
    assert max(plan.msg["data"][0]["y"]) == 5.0


def test_redraw_pause_is_bounded():
    window, loss = PlotWindow(window_for_group("train"), 100, RAW), Series()
    loss.extend(range(APPEND_MAX_SHOWN * 2), np.random.default_rng(1).random(APPEND_MAX_SHOWN * 2))
    window.commit(window.plan({"loss": Line(loss)}, "env", 0.0), 0.0, seconds=0.0)
    grown(loss, 1)
    assert window.plan({"loss": Line(loss)}, "env", MIN_REDRAW_INTERVAL / 2) is None
    assert window.plan({"loss": Line(loss)}, "env", MIN_REDRAW_INTERVAL) is not None


def timed(n: int, start: float = 1_700_000_000.0, every: float = 2.0) -> Series:
    """A series of ``n`` noisy points logged ``every`` seconds from ``start``."""
    series = Series()
    values = np.random.default_rng(5).exponential(0.3, n)
    series.extend(range(n), values, [start + every * i for i in range(n)])
    return series


def test_each_series_is_drawn_raw_and_faint_under_its_smoothed_curve():
    window, loss = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.6)), timed(50)
    raw, smooth = window.plan({"loss": Line(loss)}, "env", 0.0).msg["data"]
    assert raw["name"] == smooth["name"] == "loss" and smooth["meta"] == "smoothed"
    color = series_colors(["loss"])["loss"]
    assert smooth["line"]["color"] == color and raw["line"]["color"] == faint(color)
    assert not raw["showlegend"] and smooth["showlegend"], "one legend entry hides both"
    assert raw["y"] == pytest.approx(loss.values().tolist())
    assert smooth["y"][0] == pytest.approx(raw["y"][0], rel=1e-6), "debiased: starts at the data"


def test_a_series_color_comes_from_its_name_whatever_the_order_it_came_in():
    # Live, series arrive one by one; replayed, all at once: the colors must agree.
    names = ["loss", "loss_D", "loss_G", "cpu_percent", "rss_gib", "loader_wait_share"]
    colors = series_colors(names)
    assert len(set(colors.values())) == len(names), "no two series of a window share one"
    assert series_colors(list(reversed(names))) == colors
    live = PlotWindow(window_for_group("train"), 2000, RAW)
    for n in range(1, len(names) + 1):
        plan = live.plan({name: Line(timed(5)) for name in names[:n]}, "env", float(n))
        assert plan is not None
        live.commit(plan, float(n), 0.0)
    drawn = {t["name"]: t["line"]["color"] for t in plan.msg["data"]}
    assert drawn == colors


def test_the_smoothed_curve_is_computed_from_every_point_before_decimation():
    loss = timed(100_000)
    window = PlotWindow(window_for_group("train"), 500, ViewSettings(0.9))
    raw, smooth = window.plan({"loss": Line(loss)}, "env", 0.0).msg["data"]
    assert len(raw["x"]) <= 500 and len(smooth["x"]) <= 500
    last, seen = 0.0, 0
    for value in loss.values().tolist():  # TensorBoard's EMA over all 100,000 points
        last, seen = last * 0.9 + 0.1 * value, seen + 1
    assert smooth["x"][-1] == 99_999
    assert smooth["y"][-1] == pytest.approx(last / (1 - 0.9**seen), rel=1e-6)


def test_appends_carry_the_new_raw_and_smoothed_points_of_every_series():
    n = SPARSE_POINTS
    loss, window = timed(n), PlotWindow(window_for_group("train"), 2000, ViewSettings(0.5))
    window.commit(window.plan({"loss": Line(loss)}, "env", 0.0), 0.0, 0.01)
    loss.extend([n, n + 1], [1.0, 2.0], [1_700_000_200.0, 1_700_000_202.0])
    plan = window.plan({"loss": Line(loss)}, "env", 1.0)
    assert plan.route == "update" and [t["x"] for t in plan.msg["data"]] == [[n, n + 1]] * 2
    full = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.5))
    whole = full.plan({"loss": Line(loss)}, "env", 0.0).msg["data"][1]["y"]
    assert plan.msg["data"][1]["y"] == pytest.approx(whole[-2:], rel=1e-6)


def test_a_sparse_series_is_drawn_raw_until_it_has_enough_points_to_smooth():
    # A validation loss once an epoch, smoothed, ended off the value the tables show.
    val = timed(SPARSE_POINTS - 1)
    window = PlotWindow(window_for_group("val"), 2000, ViewSettings(0.6))
    plan = window.plan({"loss": Line(val)}, "env", 0.0)
    (raw,) = plan.msg["data"]
    assert raw["y"][-1] == pytest.approx(val.values()[-1]) and raw["showlegend"]
    window.commit(plan, 0.0, 0.01)
    val.extend([SPARSE_POINTS], [1.0], [1_700_000_500.0])
    plan = window.plan({"loss": Line(val)}, "env", 5.0)
    assert plan.route == "events", "smoothed from now on: drawn anew with its smoothed trace"
    assert [t.get("meta") for t in plan.msg["data"]] == [None, "smoothed"]


def test_a_sparse_series_is_dotted_until_a_live_run_makes_it_dense():
    # One point drew nothing at all: a line needs two, and no marker was asked for.
    val, window = grown(Series(), 1), PlotWindow(window_for_group("val"), 2000, RAW)
    plan = window.plan({"loss": Line(val)}, "env", 0.0)
    (trace,) = plan.msg["data"]
    assert trace["mode"] == "lines+markers" and trace["marker"]["color"] == trace["line"]["color"]
    window.commit(plan, 0.0, 0.01)
    plan = window.plan({"loss": Line(grown(val, SPARSE_POINTS - 2))}, "env", 1.0)
    assert plan.route == "update", "still sparse: appended, drawn in the dotted trace's mode"
    window.commit(plan, 1.0, 0.01)
    plan = window.plan({"loss": Line(grown(val, 1))}, "env", 2.0)
    (trace,) = plan.msg["data"]
    assert plan.route == "events" and trace["mode"] == LINES_MODE and "marker" not in trace


def test_a_percent_axis_reaches_down_to_zero_and_other_axes_fit_their_values():
    # cpu_percent between 99.8 and 100 filled the pane as if it swung.
    cpu = grown(Series(), 3, value=99.9)
    percent = PlotWindow(home_window("system", "cpu_percent"), 2000, RAW)
    yaxis = percent.plan({"cpu_percent": Line(cpu)}, "env", 0.0).msg["layout"]["yaxis"]
    assert yaxis["rangemode"] == "tozero" and yaxis["type"] == "linear"
    gib = PlotWindow(home_window("system", "rss_gib"), 2000, RAW)
    assert "rangemode" not in gib.plan({"rss_gib": Line(cpu)}, "env", 0.0).msg["layout"]["yaxis"]
    log_y = PlotWindow(home_window("system", "cpu_percent"), 2000, ViewSettings(0.0, log_y=True))
    yaxis = log_y.plan({"cpu_percent": Line(cpu)}, "env", 0.0).msg["layout"]["yaxis"]
    assert "rangemode" not in yaxis, "a log axis has no zero"


def test_a_new_weight_redraws_with_the_same_names_and_no_new_pane():
    loss = timed(SPARSE_POINTS)
    window = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.6))
    first = window.plan({"loss": Line(loss)}, "env", 0.0)
    window.commit(first, 0.0, 0.01)
    window.set_view(ViewSettings(0.95))
    plan = window.plan({"loss": Line(loss)}, "env", 5.0)
    assert plan.route == "events" and plan.msg["data"][0]["type"] == "scatter"
    assert [t["name"] for t in plan.msg["data"]] == [t["name"] for t in first.msg["data"]]
    assert plan.msg["data"][1]["y"][-1] != first.msg["data"][1]["y"][-1]
    window.commit(plan, 5.0, 0.01)
    window.set_view(ViewSettings(0.0))
    (raw,) = window.plan({"loss": Line(loss)}, "env", 10.0).msg["data"]
    assert raw["line"]["color"] == series_colors(["loss"])["loss"] and raw["showlegend"], (
        "unsmoothed: raw alone"
    )


def test_x_as_relative_or_wall_time_and_y_on_a_log_scale():
    start = 1_700_000_000.0
    loss = timed(200, start=start + 30, every=3.0)  # the run started 30 s before this series
    line = Line(loss, origin=start)
    window = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.0, "relative", True))
    plan = window.plan({"loss": line}, "env", 0.0)
    assert plan.msg["layout"]["yaxis"]["type"] == "log"
    # 30 s to 627 s after the start: shown in minutes.
    assert plan.msg["layout"]["xaxis"]["title"] == "time since start (min)"
    assert plan.msg["data"][0]["x"][:2] == pytest.approx([0.5, 0.55])
    wall = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.0, "wall"))
    plan = wall.plan({"loss": line}, "env", 0.0)
    assert plan.msg["layout"]["xaxis"]["type"] == "date"
    offset = time.localtime(start + 30).tm_gmtoff
    assert plan.msg["data"][0]["x"][0] == (start + 30 + offset) * 1000, "local clock, in ms"


def test_relative_time_switches_unit_as_the_run_grows():
    start, loss = 1_700_000_000.0, Series()
    loss.extend(range(10), [1.0] * 10, [start + i for i in range(10)])
    window = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.0, "relative"))
    plan = window.plan({"loss": Line(loss, start)}, "env", 0.0)
    assert plan.msg["layout"]["xaxis"]["title"] == "time since start (s)"
    window.commit(plan, 0.0, 0.01)
    loss.extend([10], [1.0], [start + 600])  # ten minutes in: the axis is redrawn in minutes
    plan = window.plan({"loss": Line(loss, start)}, "env", 5.0)
    assert plan.route == "events" and plan.msg["layout"]["xaxis"]["title"].endswith("(min)")
    assert plan.msg["data"][0]["x"][-1] == pytest.approx(10.0)


def test_points_without_a_wall_time_are_left_out_of_time_axes():
    loss = Series()
    loss.extend([0, 1, 2], [1.0, 2.0, 3.0], [1_700_000_000.0, math.nan, 1_700_000_002.0])
    window = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.0, "relative"))
    (raw,) = window.plan({"loss": Line(loss, 1_700_000_000.0)}, "env", 0.0).msg["data"]
    assert raw["x"] == [0.0, 2.0] and raw["y"] == [1.0, 3.0]


def test_a_new_axis_swaps_the_pane_out_first_so_the_page_drops_its_zoom():
    loss, window = timed(20), PlotWindow(window_for_group("train"), 2000, ViewSettings())
    window.commit(window.plan({"loss": Line(loss)}, "env", 0.0), 0.0, 0.01)
    window.set_view(ViewSettings(log_y=True))
    placeholder = window.plan({"loss": Line(loss)}, "env", 2.0)
    assert placeholder.msg["data"][0]["type"] == "text" and placeholder.msg["win"] == "train"
    assert window.deferred, "the plot is still to come, with no new point to prompt it"
    window.commit(placeholder, 2.0, 0.01)
    assert window.plan({"loss": Line(loss)}, "env", 2.0 + REMOUNT_GAP / 2) is None
    assert window.deferred, "the follow loop comes back for it soon"
    plan = window.plan({"loss": Line(loss)}, "env", 2.0 + REMOUNT_GAP)
    assert plan.msg["layout"]["yaxis"]["type"] == "log"
    # Only the axes need a fresh pane; a smoothing change is a plain redraw.
    window.commit(plan, 3.0, 0.01)
    window.set_view(ViewSettings(0.9, log_y=True))
    assert window.plan({"loss": Line(loss)}, "env", 5.0).msg["data"][0]["type"] == "scatter"


def test_a_window_point_budget_is_shared_by_its_traces():
    rng = np.random.default_rng(0)
    lines = {}
    for i in range(100):  # noisy: decimation keeps each bucket's min and max
        lines[f"run{i}"] = Line(series := Series())
        series.extend(range(100_000), rng.random(100_000).tolist())
    window = PlotWindow(window_for_group("train"), 2000, RAW, window_points=200_000)
    plan = window.plan(lines, "env", now=0.0)
    drawn = [len(t["x"]) for t in plan.msg["data"]]
    assert len(drawn) == 100 and all(1900 <= n <= 2000 for n in drawn), "each its --max-points"
    window = PlotWindow(window_for_group("train"), 20_000, RAW, window_points=200_000)
    plan = window.plan(lines, "env", now=0.0)
    assert sum(len(t["x"]) for t in plan.msg["data"]) <= 200_000
    assert trace_budget(2000, 200_000, 1000) == 200 and trace_budget(2000, 10, 1000) == MIN_POINTS
    assert trace_budget(2000, None, 1000) == 2000


def test_a_group_draws_its_band_under_its_mean_and_is_redrawn_never_appended():
    mean = grown(Series(), 5, 2.0)
    band = (np.full(5, 1.0), np.full(5, 3.0))
    window = PlotWindow(window_for_group("train"), 2000, RAW, {"g": "#1f77b4"})
    plan = window.plan({"g": Line(mean, None, band)}, "env", now=0.0)
    low, high, line = plan.msg["data"]
    assert (low["y"], high["y"], line["y"]) == ([1.0] * 5, [3.0] * 5, [2.0] * 5)
    assert high["fill"] == "tonexty" and not low["showlegend"] and not high["showlegend"]
    assert line["customdata"][0] == [1.0, 3.0] and "max" in line["hovertemplate"]
    window.commit(plan, 0.0, 0.01)
    assert window.plan({"g": Line(mean, None, band)}, "env", now=1.0) is None
    mean.rewinds += 1  # a run of the group grew: the same steps, another mean
    plan = window.plan({"g": Line(mean, None, band)}, "env", now=2.0)
    assert plan.route == "events" and plan.redraw


def test_a_window_past_its_smoothed_lines_draws_each_once_raw_unnamed_then_smoothed_again():
    lines = {f"run{i}": Line(grown(Series(), 100, float(i))) for i in range(3)}
    window = PlotWindow(window_for_group("train"), 2000, ViewSettings(0.6), smoothed_lines=2)
    plan = window.plan(lines, "env", now=0.0)
    assert [t.get("meta") for t in plan.msg["data"]] == [None] * 3
    assert all(len(t["x"]) == 100 for t in plan.msg["data"]), "whole, raw"
    assert not plan.msg["layout"]["showlegend"], "named on hover: a legend of each took longer"
    window.commit(plan, 0.0, 0.01)
    del lines["run2"]  # one line fewer: a redraw, smoothed over raw again
    plan = window.plan(lines, "env", now=10.0)
    assert plan.redraw and [t.get("meta") for t in plan.msg["data"]] == [None, "smoothed"] * 2
    assert plan.msg["layout"]["showlegend"] and plan.msg["opts"]["showlegend"]
