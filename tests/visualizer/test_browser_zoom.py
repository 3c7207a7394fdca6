"""Zoom to full resolution in headless Chromium: a zoom set through Plotly, as a drag sets it,
draws every stored point of the range; a double-click restores the overview; live points keep
the zoom; the comparison env zooms on relative time, a run's page on wall time."""

from __future__ import annotations

import math
import time
from pathlib import Path

from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, choose, page_script, plot_of
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from visualizer.follower import Follower
from visualizer.model.traces import local_ms
from visualizer.panes.display import DEFAULT_MAX_POINTS, run_start
from visualizer.panes.view import ViewSettings
from visualizer.visdom_client import VisdomClient

POINTS, SPACING = 1_000_000, 2  # a million points, logged every other step
# What a person's drag does to a plot: Plotly.relayout on its div, which emits the
# page's plotly_relayout event (a double-click sends xaxis.autorange instead).
RELAYOUT_JS = """
const div = Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find(d => (d.layout.title.text || d.layout.title) === arguments[0]);
return Plotly.relayout(div, arguments[1]);
"""


def _write(store: Path, steps: range) -> None:
    """A run of ``steps``, one every 0.1 ms of wall time whatever the machine's load
    (runs compared on relative time then have the same points in a time range)."""
    start = time.time()
    with Recorder(store, flush_interval=0.05) as rec:
        for step in steps:
            noise = ((step * 7919) % 1000) / 1000.0  # a loss-like curve, with a wave to zoom into
            loss = 1 / (1 + step / 2e5) + 0.05 * math.sin(step / 40) + 0.03 * noise
            rec.log({"loss": loss}, step=step, wall_time=start + step * 1e-4)


def _relayout(driver, title: str, update: dict) -> None:
    driver.execute_script(RELAYOUT_JS, title, update)


def _raw(plot: dict | None) -> list | None:
    """The x values of the plot's raw trace (the smoothed one is drawn from the same points)."""
    return plot["xs"][0] if plot else None


def _xs(driver, title: str) -> dict | None:
    """``_plot`` with every trace's x values."""
    plot = plot_of(driver, title)
    if plot is not None:
        plot["xs"] = page_script(
            driver,
            "const div = Array.from(document.querySelectorAll('.js-plotly-plot'))"
            "  .find(d => d.layout && (d.layout.title.text || d.layout.title) === arguments[0]);"
            "return div && div.data ? div.data.map(t => t.x) : null;",
            title,
        )
    return plot if plot is not None and plot["xs"] is not None else None


def test_a_zoom_into_a_million_points_draws_every_stored_point_of_the_range(
    tmp_path, visdom_server, chromium_driver, run_name
):
    store = tmp_path / run_name / "pickle"
    _write(store, range(0, POINTS * SPACING, SPACING))
    last = (POINTS - 1) * SPACING
    driver, title = chromium_driver, "train losses"
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    client = VisdomClient(visdom_server.endpoint)
    with following(store, visdom_server.endpoint):
        # Opened once drawn, as the printed URL is: a million points take a moment to read.
        wait_until(lambda: client.window_exists(run_name, "train"), timeout=BROWSER_WAIT_S)
        driver.get(f"{visdom_server.url}/env/{run_name}")
        overview = wait.until(lambda d: (p := _xs(d, title)) and p["drawn"] == 2 and p)
        # The overview: the whole run, decimated (a raw and a smoothed trace share the points).
        assert overview["lengths"][0] <= DEFAULT_MAX_POINTS // 2 and _raw(overview)[-1] == last
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_zoom_overview.png"))

        # 999 stored points: every one drawn, at the stored spacing.
        zoom = [1_000_000, 1_000_000 + 998 * SPACING]
        _relayout(driver, title, {"xaxis.range": zoom})
        stored = list(range(zoom[0], zoom[1] + 1, SPACING))
        plot = wait.until(lambda d: (p := _xs(d, title)) and _raw(p) == stored and p)
        assert plot["xs"][1] == stored, "the smoothed curve at full resolution too"
        assert plot["x_axis"]["range"] == zoom and plot["x_axis"]["autorange"] is False
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_zoom_in.png"))

        # A double-click (autorange) brings the overview back.
        _relayout(driver, title, {"xaxis.autorange": True, "yaxis.autorange": True})
        plot = wait.until(lambda d: (p := _xs(d, title)) and _raw(p)[-1] == last and p)
        assert len(_raw(plot)) <= DEFAULT_MAX_POINTS // 2 and _raw(plot)[0] == 0

        # Zoomed at the live edge: points logged now arrive at full resolution, the zoom stays.
        zoom = [last - 400, last + 400]
        _relayout(driver, title, {"xaxis.range": zoom})
        wait.until(lambda d: (p := _xs(d, title)) and _raw(p)[0] == last - 402)
        _write(store, range(last + SPACING, last + 101 * SPACING, SPACING))
        plot = wait.until(
            lambda d: (p := _xs(d, title)) and _raw(p)[-1] == last + 100 * SPACING and p
        )
        assert _raw(plot) == list(range(last - 402, last + 101 * SPACING, SPACING))
        assert plot["x_axis"]["range"] == zoom and plot["x_axis"]["autorange"] is False
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_zoom_live.png"))
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_the_comparison_zooms_on_relative_time(tmp_path, visdom_server, chromium_driver, run_name):
    runs = tmp_path / run_name
    for name in ("a", "b"):
        _write(runs / name / "pickle", range(30_000))
    follower = Follower(str(runs), VisdomClient(visdom_server.endpoint))
    follower.run_once()
    # Each run's stored points in relative time (seconds: the runs last a few seconds).
    stored = {}
    for name, feed in follower.feeds.items():
        series = feed.data.series[("train", "loss")]
        stored[name] = (series.times(slice(None)) - run_start(feed.data)).tolist()
    zoom = [stored["a"][15_000], stored["a"][15_500]]  # 501 points of run a
    driver, title = chromium_driver, "train losses: loss (2 runs)"
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    with following(runs, visdom_server.endpoint):
        driver.get(f"{visdom_server.url}/env/{run_name}_compare")
        wait.until(lambda d: (p := plot_of(d, title)) and p["drawn"] == 4)
        choose(driver, "x axis", "relative time")
        plot = wait.until(
            lambda d: (p := _xs(d, title)) and p["x_axis"]["title"] == "time since start (s)"
            and p["drawn"] == 4 and p
        )  # fmt: skip
        assert plot["lengths"][0] <= DEFAULT_MAX_POINTS // 2
        _relayout(driver, title, {"xaxis.range": zoom})

        def inside(xs: list) -> list:
            return [x for x in xs if zoom[0] <= x <= zoom[1]]

        # Every stored point of each run in the range, and a neighbour on either side.
        plot = wait.until(lambda d: (p := _xs(d, title)) and len(inside(p["xs"][0])) == 501 and p)
        for name, xs in zip(plot["names"], plot["xs"], strict=True):
            assert inside(xs) == inside(stored[name]), name
            assert len(xs) == len(inside(xs)) + 2, name
        assert plot["x_axis"]["range"] == zoom and plot["x_axis"]["autorange"] is False
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_zoom_compare_relative.png"))


def test_a_zoom_on_wall_time_draws_every_stored_point_of_its_dates(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """A date axis reports its range as date strings, as a drag leaves them."""
    store = tmp_path / run_name / "pickle"
    _write(store, range(20_000))
    driver, title = chromium_driver, "train losses"
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    with following(store, visdom_server.endpoint, view=ViewSettings(x_axis="wall")) as follower:
        client = VisdomClient(visdom_server.endpoint)
        wait_until(lambda: client.window_exists(run_name, "train"), timeout=BROWSER_WAIT_S)
        driver.get(f"{visdom_server.url}/env/{run_name}")
        wait.until(lambda d: (p := plot_of(d, title)) and p["x_axis"]["type"] == "date")
        times = follower.feeds[run_name].data.series[("train", "loss")].times(slice(None))
        shown = local_ms(times[[8_000, 8_400]]).tolist()
        # The page's own range in milliseconds, from the date strings it keeps.
        zoom = driver.execute_script(
            "const div = Array.from(document.querySelectorAll('.js-plotly-plot'))"
            "  .find(d => (d.layout.title.text || d.layout.title) === arguments[0]);"
            "const ax = div._fullLayout.xaxis;"
            "return Plotly.relayout(div, {'xaxis.range[0]': ax.l2r(arguments[1]),"
            "  'xaxis.range[1]': ax.l2r(arguments[2])}).then(() => ax.range.map(r => ax.r2l(r)));",
            title,
            *shown,
        )
        drawn = local_ms(times)
        stored = drawn[(drawn >= zoom[0]) & (drawn <= zoom[1])].tolist()
        assert len(stored) >= 100  # date strings keep a tenth of a millisecond
        plot = wait.until(
            lambda d: (p := _xs(d, title)) and [x for x in _raw(p) if zoom[0] <= x <= zoom[1]]
            == stored and p
        )  # fmt: skip
        assert len(_raw(plot)) <= len(stored) + 2 and plot["x_axis"]["autorange"] is False
