"""PlotWindow's choices, without a server: append small windows, redraw big ones at a bounded rate."""

from __future__ import annotations

import numpy as np

from visualizer.display import APPEND_MAX_SHOWN, MIN_REDRAW_INTERVAL, PlotWindow
from visualizer.layout import window_for_group
from visualizer.series import Series


def grown(series: Series, n: int, value: float = 1.0) -> Series:
    start = 0 if series.last_step is None else series.last_step + 1
    series.extend(range(start, start + n), [value] * n)
    return series


def test_small_windows_are_appended_to():
    window, loss = PlotWindow(window_for_group("train"), 2000), Series()
    plan = window.plan({"loss": grown(loss, 10)}, "env", now=0.0)
    assert plan.route == "events" and plan.msg["data"][0]["x"] == list(range(10))
    window.commit(plan, 0.0, 0.01)
    plan = window.plan({"loss": grown(loss, 5)}, "env", now=0.01)
    assert plan.route == "update" and plan.msg["append"] is True
    assert plan.msg["data"][0]["x"] == [10, 11, 12, 13, 14], "only the new points travel"
    window.commit(plan, 0.01, 0.01)
    assert window.plan({"loss": loss}, "env", now=0.02) is None, "nothing new, nothing sent"


def test_every_trace_is_in_an_append_in_server_order():
    window, a, b = (
        PlotWindow(window_for_group("train"), 2000),
        grown(Series(), 3),
        grown(Series(), 3),
    )
    window.commit(window.plan({"a": a, "b": b}, "env", 0.0), 0.0, 0.01)
    plan = window.plan({"b": grown(b, 2), "a": a}, "env", 1.0)
    assert [t["name"] for t in plan.msg["data"]] == ["a", "b"] and plan.msg["data"][0]["x"] == []


def test_new_trace_or_rewind_redraws_at_once():
    window, loss = PlotWindow(window_for_group("train"), 2000), grown(Series(), 10)
    window.commit(window.plan({"loss": loss}, "env", 0.0), 0.0, 0.5)
    assert window.plan({"loss": loss, "aux": grown(Series(), 1)}, "env", 0.0).route == "events"
    loss.extend([3], [9.0])  # a resumed run logs step 3 again
    plan = window.plan({"loss": loss}, "env", 0.0)
    assert plan.route == "events" and plan.msg["data"][0]["y"][3] == 9.0


def test_big_windows_are_redrawn_decimated_and_throttled():
    window, loss = PlotWindow(window_for_group("train"), 1000), Series()
    loss.extend(range(50_000), np.sin(np.arange(50_000) / 100.0))
    plan = window.plan({"loss": loss}, "env", now=0.0)
    assert len(plan.msg["data"][0]["x"]) <= 1000 and plan.msg["data"][0]["x"][-1] == 49_999
    window.commit(plan, now=0.0, seconds=0.2)  # a slow redraw: the next waits 4x as long
    grown(loss, 3, value=5.0)
    assert window.plan({"loss": loss}, "env", now=0.5) is None and window.deferred
    assert window.plan({"loss": loss}, "env", now=0.5, force=True).route == "events"
    plan = window.plan({"loss": loss}, "env", now=0.81)
    assert plan.route == "events" and plan.msg["data"][0]["x"][-1] == 50_002
    assert max(plan.msg["data"][0]["y"]) == 5.0


def test_redraw_pause_is_bounded():
    window, loss = PlotWindow(window_for_group("train"), 100), Series()
    loss.extend(range(APPEND_MAX_SHOWN * 2), np.random.default_rng(1).random(APPEND_MAX_SHOWN * 2))
    window.commit(window.plan({"loss": loss}, "env", 0.0), 0.0, seconds=0.0)
    grown(loss, 1)
    assert window.plan({"loss": loss}, "env", MIN_REDRAW_INTERVAL / 2) is None
    assert window.plan({"loss": loss}, "env", MIN_REDRAW_INTERVAL) is not None
