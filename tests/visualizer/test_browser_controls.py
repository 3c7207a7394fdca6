"""The view controls on the page (smoothing, log y, time axes, a zoom, curves hidden from the
legend), in a headless Chromium: they act live and survive the follower's updates."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from selenium.webdriver.support.ui import WebDriverWait

from tests.fixtures.servers.pages import BROWSER_WAIT_S, choose, plot_of, screenshot, type_into
from tests.fixtures.servers.visdom_reading import following, recorder


def tensorboard_smoothed_last(values: list[float], weight: float) -> float:
    """TensorBoard's debiased EMA over all ``values``, computed point by point, its last value."""
    last = 0.0
    for value in values:
        last = last * weight + (1 - weight) * value
    return last / (1 - weight ** len(values))


class LiveRun:
    """A run that logs a burst of points on demand while the page watches."""

    def __init__(self, store: Path) -> None:
        self.store, self.step, self.values = store, 0, []
        self.rng = np.random.default_rng(11)

    def log(self, n: int) -> int:
        with recorder(self.store) as rec:
            for _ in range(n):
                value = float(self.rng.exponential(0.3) + 2.0 / (1 + self.step / 50))
                rec.log({"loss": value}, step=self.step)
                self.values.append(value)
                self.step += 1
        return self.step - 1


def _live_updates(driver, run: LiveRun, check, updates: int = 3, first: int = 0) -> dict:
    """Log ``updates`` bursts, wait for each to reach the page, and ``check`` the plot after each.

    ``first``: the first step drawn (a zoom draws the points from its range on).
    """
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    plot = None
    for _ in range(updates):
        last = run.log(40)
        plot = wait.until(
            lambda d, last=last: (p := plot_of(d, "train losses")) and len(p["names"]) == 2
            and p["lengths"][0] == last + 1 - first and p
        )  # fmt: skip
        check(plot)
    assert plot is not None
    return plot


def test_log_y_relative_time_zoom_and_hidden_traces_survive_live_updates(
    tmp_path, visdom_server, chromium_driver, run_name
):
    store = tmp_path / run_name / "pickle"
    run = LiveRun(store)
    run.log(200)
    driver = chromium_driver
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    with following(store, visdom_server.endpoint):
        driver.get(f"{visdom_server.url}/env/{run_name}")
        wait.until(lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2)

        # Smoothing from the page: the smoothed trace's last value is TensorBoard's EMA
        # over every point at the new weight.
        type_into(driver, "smoothing", "0.9")
        plot = wait.until(
            lambda d: (p := plot_of(d, "train losses"))
            and abs(p["y_last"][1] - tensorboard_smoothed_last(run.values, 0.9))
            <= 1e-6 * abs(p["y_last"][1]) and p
        )  # fmt: skip
        assert plot["smoothed"] == [False, True]

        choose(driver, "y axis", "log")
        wait.until(lambda d: (p := plot_of(d, "train losses")) and p["y_axis"]["type"] == "log")
        choose(driver, "x axis", "relative time")
        wait.until(
            lambda d: (
                (p := plot_of(d, "train losses"))
                and p["x_axis"]["title"].startswith("time since start")
                and p["drawn"] == 2
            )
        )

        def axes_kept(plot: dict) -> None:
            assert plot["y_axis"]["type"] == "log"
            assert plot["x_axis"]["title"].startswith("time since start"), plot["x_axis"]
            assert plot["x_last"][0] < 600, "x is seconds or minutes since the start, not a step"

        _live_updates(driver, run, axes_kept)
        assert screenshot(driver, "visualizer_log_y_relative_time")

        # Zoom into the run from step 150 on, hide the curve, and keep logging: the zoom is
        # drawn from the point before it (step 149), and new points arrive in it.
        choose(driver, "x axis", "step")
        wait.until(lambda d: (p := plot_of(d, "train losses")) and p["x_axis"]["title"] == "step")
        zoom = [150, 1000]
        driver.execute_script(
            "const div = Array.from(document.querySelectorAll('.js-plotly-plot'))"
            "  .find(d => d.layout.title === 'train losses' || "
            "             (d.layout.title && d.layout.title.text === 'train losses'));"
            "return Plotly.relayout(div, {'xaxis.range': arguments[0]});",
            zoom,
        )

        def zoom_kept(plot: dict) -> None:
            assert plot["x_axis"]["range"] == zoom and plot["x_axis"]["autorange"] is False
            assert plot["y_axis"]["type"] == "log"

        _live_updates(driver, run, zoom_kept, first=149)
        assert screenshot(driver, "visualizer_zoom_kept")

        driver.execute_script(  # what a click on the legend entry does
            "const div = Array.from(document.querySelectorAll('.js-plotly-plot'))"
            "  .find(d => (d.layout.title.text || d.layout.title) === 'train losses');"
            "return Plotly.restyle(div, {visible: 'legendonly'}, [0, 1]);"
        )

        def hidden_kept(plot: dict) -> None:
            assert plot["visible"] == ["legendonly", "legendonly"]

        _live_updates(driver, run, hidden_kept, first=149)
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


def _hide_from_legend(driver, title: str, name: str) -> None:
    """Click ``name``'s legend entry in plot ``title``, as a person hides a curve."""
    entry = WebDriverWait(driver, BROWSER_WAIT_S).until(
        lambda d: d.execute_script(
            "const div = Array.from(document.querySelectorAll('.js-plotly-plot'))"
            "  .find(d => (d.layout.title.text || d.layout.title) === arguments[0]);"
            "return Array.from(div.querySelectorAll('.legend .traces'))"
            "  .find(t => t.textContent.trim() === arguments[1]).querySelector('.legendtoggle');",
            title,
            name,
        )
    )
    entry.click()


@contextmanager
def _loss_hidden_from_the_legend(
    store: Path, run: LiveRun, visdom_server: Any, driver: Any
) -> Iterator[None]:
    """The run's page, followed live, with its loss curve (raw and smoothed) hidden by a click."""
    run.log(200)
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    with following(store, visdom_server.endpoint):
        driver.get(f"{visdom_server.url}/env/{store.parent.name}")
        wait.until(lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2)
        _hide_from_legend(driver, "train losses", "loss")
        wait.until(lambda d: plot_of(d, "train losses")["visible"] == ["legendonly"] * 2)
        yield


def _hidden_kept(plot: dict) -> None:
    assert plot["visible"] == ["legendonly", "legendonly"], plot["visible"]


def test_a_curve_hidden_from_the_legend_stays_hidden_when_the_smoothing_changes(
    tmp_path, visdom_server, chromium_driver, run_name
):
    store = tmp_path / run_name / "pickle"
    run, driver = LiveRun(store), chromium_driver
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    with _loss_hidden_from_the_legend(store, run, visdom_server, driver):
        type_into(driver, "smoothing", "0.9")
        wait.until(
            lambda d: (p := plot_of(d, "train losses"))
            and abs(p["y_last"][1] - tensorboard_smoothed_last(run.values, 0.9))
            <= 1e-6 * abs(p["y_last"][1])
        )  # fmt: skip
        _hidden_kept(plot_of(driver, "train losses"))
        _live_updates(driver, run, _hidden_kept)
        assert screenshot(driver, "visualizer_hidden_after_smoothing")


@pytest.mark.xfail(
    strict=True,
    reason="a new axis remounts the plot pane (the only way visdom 0.2.4's page drops a zoom), "
    "and the remounted pane forgets which traces the legend hid: issue 12, not fixed",
)
def test_a_curve_hidden_from_the_legend_stays_hidden_when_the_x_axis_changes(
    tmp_path, visdom_server, chromium_driver, run_name
):
    store = tmp_path / run_name / "pickle"
    run, driver = LiveRun(store), chromium_driver
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    with _loss_hidden_from_the_legend(store, run, visdom_server, driver):
        choose(driver, "x axis", "wall time")
        wait.until(lambda d: (p := plot_of(d, "train losses")) and p["x_axis"]["type"] == "date")
        assert screenshot(driver, "visualizer_hidden_after_x_axis")
        _live_updates(driver, run, _hidden_kept)


def test_a_new_axis_takes_effect_on_a_zoomed_plot(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """A zoom is kept across updates, but a new y scale must still show (and resets the zoom)."""
    store = tmp_path / run_name / "pickle"
    LiveRun(store).log(300)
    driver = chromium_driver
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    with following(store, visdom_server.endpoint):
        driver.get(f"{visdom_server.url}/env/{run_name}")
        wait.until(lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2)
        driver.execute_script(
            "const div = Array.from(document.querySelectorAll('.js-plotly-plot'))"
            "  .find(d => (d.layout.title.text || d.layout.title) === 'train losses');"
            "return Plotly.relayout(div, {'xaxis.range': [5, 50], 'yaxis.range': [0.5, 1.5]});"
        )
        choose(driver, "y axis", "log")
        plot = wait.until(
            lambda d: (p := plot_of(d, "train losses")) and p["y_axis"]["type"] == "log"
            and p["drawn"] == 2 and p
        )  # fmt: skip
        assert plot["x_axis"]["autorange"] is True, "the old zoom is gone with the old axis"
        assert screenshot(driver, "visualizer_log_y_after_zoom")
