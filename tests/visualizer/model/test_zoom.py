"""Zoom to full resolution: the page's x range read back into the axis' terms, the stored points
of a range, their sampling, a zoomed window's redraws; and the page's event reaching a follower."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapshot_store import Recorder
from tests.fixtures.servers.visdom_reading import following, page_socket
from tests.fixtures.servers.waiting import wait_until
from tests.visualizer.sources.test_s3 import upload
from visualizer.layout import window_for_group
from visualizer.model.decimate import decimate_indices
from visualizer.model.series import Series
from visualizer.model.traces import epoch_seconds, local_ms
from visualizer.model.zoom import (
    AXIS_LIMITS,
    WALL_LIMITS,
    ZOOM_EVENT,
    Pick,
    Zoom,
    pick,
    sample,
    zoom_of,
)
from visualizer.panes.plotmessage import Line
from visualizer.panes.plotwindow import PlotWindow
from visualizer.panes.view import X_AXES, ViewSettings

RAW = ViewSettings(smoothing=0.0)
ZOOM_AGAIN_S = 5.0  # the page's zoom sent again after this long with nothing redrawn
T0 = 1_700_000_000.0


def event(bounds: object) -> dict:
    return {"event_type": ZOOM_EVENT, "range": bounds}


def stepped(steps: range, times: bool = True) -> Series:
    series = Series()
    values = [float((s * 7919) % 101) for s in steps]
    series.extend(steps, values, [T0 + s for s in steps] if times else None)
    return series


def test_the_pages_range_is_kept_in_the_axis_terms():
    assert zoom_of(event([10, 20.5]), "step", 1.0) == Zoom("step", 10.0, 20.5)
    assert zoom_of(event([20, 10]), "step", 1.0) == Zoom("step", 10.0, 20.0), "a reversed axis"
    assert zoom_of(event(None), "step", 1.0) is None, "autorange: the whole run"
    # Relative time drawn in minutes is kept in seconds, and drawn back in the unit in use.
    zoom = zoom_of(event([2, 3]), "relative", 60.0)
    assert zoom == Zoom("relative", 120.0, 180.0) and zoom.drawn(3600.0) == [120 / 3600, 0.05]
    # Wall time is drawn as local-clock milliseconds, and kept as seconds since the epoch.
    drawn = local_ms(np.array([T0, T0 + 90.0])).tolist()
    zoom = zoom_of(event(drawn), "wall", 1.0)
    assert zoom == Zoom("wall", T0, T0 + 90.0) and zoom.drawn(1.0) == drawn


@pytest.mark.parametrize(
    "bounds",
    [
        [1],
        "0,1",
        [0, "x"],
        ["0", "1"],
        [0, float("nan")],
        [None, 1],
        [True, 2],
        [0, [1]],
        {},
        [3, 3],
    ],
)
def test_a_range_that_is_not_two_numbers_is_refused(bounds):
    with pytest.raises(ValueError, match="x range"):
        zoom_of(event(bounds), "step", 1.0)
    with pytest.raises(ValueError, match="no x range"):
        zoom_of({"event_type": ZOOM_EVENT}, "step", 1.0)


def test_a_range_past_what_the_axis_shows_is_clamped_to_it():
    big = 10**400  # JSON's integers have no bound; a float has
    assert zoom_of(event([-big, 1e300]), "step", 1.0) == Zoom("step", -(2.0**63), 2.0**63)
    span = AXIS_LIMITS["relative"][1]
    assert zoom_of(event([0, 1e306]), "relative", 86400.0) == Zoom("relative", 0.0, span)
    assert zoom_of(event([-float("inf"), 10]), "wall", 1.0).lo == WALL_LIMITS[0]
    with pytest.raises(ValueError, match="width"):
        zoom_of(event([1e300, 1e301]), "wall", 1.0)  # both ends clamped to the same one


def test_a_pick_is_the_points_in_range_and_a_neighbour_either_side():
    series = stepped(range(0, 100, 2))
    chosen = pick(Zoom("step", 10, 20), series, None)
    assert series.steps()[chosen.index].tolist() == [8, 10, 12, 14, 16, 18, 20, 22]
    assert chosen.edge.tolist() == [True] + [False] * 6 + [True]
    # Between two points: the line across the range, from the one before to the one after.
    chosen = pick(Zoom("step", 11, 11.5), series, None)
    assert series.steps()[chosen.index].tolist() == [10, 12] and chosen.edge.all()
    assert pick(Zoom("step", 200, 300), series, None).index.tolist() == [49], "past the end"


def test_time_axes_pick_by_wall_time_and_leave_points_without_one_out():
    series = stepped(range(10))
    series.extend([10, 11, 12], [1.0, 2.0, 3.0], [float("nan"), T0 + 11, T0 + 12])
    wall = pick(Zoom("wall", T0 + 3, T0 + 5), series, None)
    assert wall.index.tolist() == [2, 3, 4, 5, 6]
    # Relative time counts from the run's start, which may be before this series' first point.
    relative = pick(Zoom("relative", 8, 12), series, T0 - 2)
    assert series.steps()[relative.index].tolist() == [5, 6, 7, 8, 9], "step 10 has no time"


def test_a_range_the_page_sends_at_two_points_picks_them_inside():
    """The page's range went to its milliseconds (or minutes) and back: for some times the
    way back lands an ulp past the point it was taken from (1 in 80 here, at random times)."""
    rng = np.random.default_rng(7)
    for start in (T0 + rng.random(400) * 3e8).tolist():
        series = Series()
        series.extend(range(5), [0.0] * 5, [start + s * 0.01 for s in range(5)])
        times = series.times(slice(None))
        wall = zoom_of(event(local_ms(times[[1, 3]]).tolist()), "wall", 1.0)
        assert pick(wall, series, None).edge.tolist() == [True, False, False, False, True]
        minutes = (times[[1, 3]] - start) / 60.0
        relative = zoom_of(event(minutes.tolist()), "relative", 60.0)
        assert pick(relative, series, start).edge.tolist() == [True, False, False, False, True]


def test_a_pick_that_fits_is_drawn_whole_else_its_edges_go_then_decimation():
    values = np.arange(100, dtype=np.float64)
    index = np.arange(10, 20)
    edge = np.zeros(10, dtype=bool)
    edge[[0, -1]] = True
    chosen = Pick(index, edge)
    assert sample(values, chosen, 10)[0].tolist() == list(range(10, 20)), "all of it fits"
    assert sample(values, chosen, 8)[0].tolist() == list(range(11, 19)), "the edges give way"
    # More than the budget inside: min/max decimation of the range, a spike in it kept.
    values[50] = 1e6
    wide = Pick(np.arange(5, 95), np.zeros(90, dtype=bool))
    points, drawn = sample(values, wide, 8)
    assert len(points) <= 8 and 50 in points.tolist() and drawn.max() == 1e6
    assert points.tolist() == (5 + decimate_indices(values[5:95], 8)).tolist()
    # Not zoomed: the whole series, as before.
    assert sample(values, None, 8)[0].tolist() == decimate_indices(values, 8).tolist()


def _zoomed(window: PlotWindow, lines: dict, bounds: object) -> dict:
    window.zoom_to(event(bounds))
    plan = window.plan(lines, "env", now=100.0)
    assert plan is not None and plan.redraw, "a zoom is drawn at once"
    window.commit(plan, 100.0, 0.01)
    return plan.msg


def test_a_zoomed_window_draws_the_range_at_full_resolution_and_autorange_the_overview():
    window, loss = PlotWindow(window_for_group("train"), 100, RAW), stepped(range(0, 20_000, 2))
    lines = {"loss": Line(loss)}
    window.commit(window.plan(lines, "env", 0.0), 0.0, 0.01)
    msg = _zoomed(window, lines, [1000, 1100])
    assert msg["data"][0]["x"] == list(range(998, 1103, 2)), "every stored point and its neighbours"
    assert msg["layout"]["xaxis"]["range"] == [1000, 1100]
    assert msg["layout"]["xaxis"]["autorange"] is False, "a page opened later shows the zoom"
    msg = _zoomed(window, lines, [0, 20_000])
    assert len(msg["data"][0]["x"]) <= 100, "a wide zoom stays within --max-points"
    msg = _zoomed(window, lines, None)
    assert len(msg["data"][0]["x"]) <= 100 and msg["data"][0]["x"][-1] == 19_998
    assert "range" not in msg["layout"]["xaxis"]


def test_new_points_redraw_a_zoom_only_when_they_change_what_it_shows():
    window, loss = PlotWindow(window_for_group("train"), 2000, RAW), stepped(range(100))
    lines = {"loss": Line(loss)}
    window.commit(window.plan(lines, "env", 0.0), 0.0, 0.01)
    _zoomed(window, lines, [10, 20])
    loss.extend([100, 101], [1.0, 2.0])
    assert window.plan(lines, "env", now=200.0) is None, "outside the range: nothing to draw"
    assert window.traces["loss"].sent == 102, "yet they count as drawn"
    _zoomed(window, lines, [90, 150])  # the live edge
    loss.extend([102], [3.0])
    plan = window.plan(lines, "env", now=300.0)
    assert plan.route == "events" and plan.msg["data"][0]["x"] == list(range(89, 103))
    assert plan.msg["layout"]["xaxis"]["range"] == [90, 150], "the zoom stays"


def test_a_new_axis_drops_the_zoom_and_a_bad_event_is_ignored(caplog):
    window, loss = PlotWindow(window_for_group("train"), 2000, RAW), stepped(range(100))
    lines = {"loss": Line(loss, origin=T0)}
    window.commit(window.plan(lines, "env", 0.0), 0.0, 0.01)
    _zoomed(window, lines, [10, 20])
    window.zoom_to(event("wide"))
    assert window.zoom == Zoom("step", 10, 20) and "ignoring the page's zoom" in caplog.text
    window.set_view(ViewSettings(smoothing=0.5))
    assert window.zoom is not None, "a new smoothing keeps the page's zoom"
    window.commit(window.plan(lines, "env", 200.0), 200.0, 0.01)
    window.set_view(ViewSettings(smoothing=0.5, x_axis="relative"))
    assert window.zoom is None, "a new axis is a fresh pane: the whole run"
    window.zoom_to(event([30, 40]))  # made on the old pane, read after the axis changed
    assert window.zoom is None


def test_a_zoom_to_1e300_on_wall_time_is_clamped_not_fatal():
    """Hardening III: the range [0, 1e300] raised OverflowError, which ended the viewer."""
    window, loss = (
        PlotWindow(window_for_group("train"), 2000, ViewSettings(0.0, "wall")),
        stepped(range(100)),
    )
    lines = {"loss": Line(loss, origin=T0)}
    window.commit(window.plan(lines, "env", 0.0), 0.0, 0.01)
    msg = _zoomed(window, lines, [0, 1e300])
    assert window.zoom == Zoom("wall", epoch_seconds(0.0), WALL_LIMITS[1])
    assert msg["data"][0]["x"] == local_ms(loss.times(slice(None))).tolist(), "all of the run"
    json.dumps(msg, allow_nan=False)  # the range sent back to the page is finite


def test_a_relative_zoom_keeps_its_stretch_when_the_unit_grows():
    window, loss = (
        PlotWindow(window_for_group("train"), 2000, ViewSettings(0.0, "relative")),
        Series(),
    )
    loss.extend(range(100), [1.0] * 100, [T0 + s for s in range(100)])
    lines = {"loss": Line(loss, origin=T0)}
    window.commit(window.plan(lines, "env", 0.0), 0.0, 0.01)
    msg = _zoomed(window, lines, [10, 20])  # seconds
    assert msg["data"][0]["x"] == [float(s) for s in range(9, 22)]
    loss.extend([100], [1.0], [T0 + 600.0])  # ten minutes in: drawn in minutes now
    plan = window.plan(lines, "env", now=200.0)
    assert plan.msg["layout"]["xaxis"]["range"] == [10 / 60, 20 / 60]


def test_a_zoom_from_the_page_redraws_an_s3_run_on_wall_time(
    tmp_path, s3_bucket, visdom_server, reader, run_name
):
    """The page's event, as its socket sends it, reaches the follower of an S3 run."""
    store, prefix = tmp_path / run_name / "pickle", f"zoom/{run_name}/pickle/"
    # 10 ms apart: points logged in a tight loop can be under a microsecond apart, below
    # what a date axis' milliseconds carry back (a float's step at 1.8e12 ms is 0.2 us),
    # so the range the page sends could not name the same first and last point.
    start = time.time() - 60.0
    with Recorder(store, flush_interval=0.05) as rec:
        for step in range(5_000):
            rec.log({"loss": 1.0 / (step + 1)}, step=step, wall_time=start + step * 0.01)
    upload(s3_bucket, store, prefix)
    with following(
        s3_bucket.uri(prefix), visdom_server.endpoint, view=ViewSettings(x_axis="wall")
    ) as follower:
        wait_until(lambda: reader.has_window(run_name, "train"))
        loss = follower.feeds[run_name].data.series[("train", "loss")]
        times = loss.times(slice(None))
        bounds = local_ms(times[[2_000, 2_100]]).tolist()  # as the page's date axis has them
        page = page_socket(visdom_server)
        try:
            message = {"target": "train", "eid": run_name, "pane_data": False} | event(bounds)
            inside = np.flatnonzero((times >= times[2_000]) & (times <= times[2_100]))
            drawn = local_ms(times[inside[0] - 1 : inside[-1] + 2]).tolist()
            sent = [-math.inf]

            def zoomed() -> bool:
                # As a person zooms again when nothing happened: on a loaded machine the
                # follower's socket may subscribe after a first event went by.
                if time.monotonic() - sent[0] > ZOOM_AGAIN_S:
                    page.send(json.dumps({"cmd": "forward_to_vis", "data": message}))
                    sent[0] = time.monotonic()
                return reader.traces(run_name, "train")["loss"][0] == drawn

            wait_until(zoomed)
        finally:
            page.close()


# Whatever the page's socket can carry: JSON values, nested, with the numbers past what
# an axis shows, and ranges of two ends of any of them (the shape the page sends).
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.text(max_size=6)
    | st.integers()
    | st.floats()
    | st.sampled_from([1e300, -1e300, 1e20, 2.0**63, 10**400, -(10**400), 5e-324]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_ENDS = (
    st.sampled_from([0, 1e300, -1e300, 10**400, float("inf"), float("nan")]) | st.floats() | _JSON
)
_EVENTS = st.fixed_dictionaries(
    {"event_type": st.just(ZOOM_EVENT)},
    optional={"range": _JSON | st.lists(_ENDS, min_size=2, max_size=2), "target": _JSON},
)
_RUN = stepped(range(200))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axis=st.sampled_from(list(X_AXES)), events=st.lists(_EVENTS, min_size=1, max_size=4))
def test_any_zoom_event_leaves_the_zoom_sane_or_as_it_was(axis, events):
    window = PlotWindow(window_for_group("train"), 100, ViewSettings(0.0, axis))
    lines = {"loss": Line(_RUN, origin=T0)}
    window.commit(window.plan(lines, "env", 0.0), 0.0, 0.01)
    low, high = AXIS_LIMITS[axis]
    for sent in events:
        before = window.zoom
        window.zoom_to(sent)
        zoom = window.zoom
        if zoom is None:
            assert before is None or sent.get("range", 0) is None, "only autorange unzooms"
        elif zoom != before:
            assert zoom.axis == axis and low <= zoom.lo < zoom.hi <= high, zoom
    plan = window.plan(lines, "env", now=100.0)
    if plan is not None:
        json.dumps(plan.msg, allow_nan=False)  # what visdom gets: finite numbers only
