"""A headless Chromium shows the follower's plots, including points appended while it watches,
and the view controls on the page (smoothing, log y, time axes) act live and survive updates."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.pages import (
    ARTIFACTS,
    BROWSER_WAIT_S,
    ROOT,
    choose,
    plot_of,
    type_into,
)
from tests.fixtures.visdom_reading import following
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient


def test_chromium_renders_the_runs_plots_and_live_appends(
    tmp_path, visdom_server, chromium_driver, run_name
):
    store = tmp_path / run_name / "pickle"
    with Recorder(store, flush_interval=0.05) as rec:
        for step in range(120):
            rec.log(
                {"loss": 2.0 * math.exp(-step / 40) + 0.05 * math.sin(step), "aux": 1 / (step + 1)},
                step=step,
                epoch=step / 40,
            )
            rec.log({"lr": 0.1 * 0.98**step}, step=step, group="lr")
        rec.log_image(
            "inputs", np.random.default_rng(0).random((4, 3, 28, 28)), step=119, dataformats="NCHW"
        )
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()

    driver = chromium_driver
    driver.get(f"{visdom_server.url}/env/{run_name}")
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    # Each series twice: raw (faint) and smoothed, under one name.
    plot = wait.until(lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 4 and p)
    assert sorted(plot["names"]) == ["aux", "aux", "loss", "loss"] and plot["points"] == [120] * 4
    assert plot["smoothed"] == [False, True, False, True]
    assert wait.until(lambda d: (p := plot_of(d, "learning rate")) and p["points"] == [120, 120])

    # The page stays open while the run goes on: appended points reach the browser.
    with following(store, visdom_server.endpoint):
        with Recorder(store, flush_interval=0.05) as rec:
            for step in range(120, 180):
                rec.log({"loss": 0.1, "aux": 0.2}, step=step)
        plot = wait.until(
            lambda d: (p := plot_of(d, "train losses")) and p["points"] == [180] * 4 and p
        )
    assert plot["drawn"] == 4
    _check_lines_without_visdoms_smoothing(driver, "train losses")
    images = driver.execute_script(
        "return document.querySelectorAll('img[src^=\"data:image/png\"]').length"
    )
    assert images >= 1
    assert "FINISHED" in driver.page_source

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_plot.png"))
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


# Per pane: visdom's "smooth lines" buttons, and the modes Plotly drew the traces in.
LINE_PANES_JS = """
return Array.from(document.querySelectorAll('.react-grid-item')).map(item => {
  const div = item.querySelector('.js-plotly-plot');
  return {buttons: item.querySelectorAll('button[title="smooth lines"]').length,
          modes: div ? div._fullData.map(t => t.mode) : []};
});
"""
# Hovers the middle point of a plot's first trace as the mouse would; the hover label's text.
HOVER_JS = """
const div = Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find(d => (d.layout.title.text || d.layout.title) === arguments[0]);
Plotly.Fx.hover(div, [{curveNumber: 0, pointNumber: Math.floor(div.data[0].x.length / 2)}]);
return Array.from(div.querySelectorAll('.hoverlayer .hovertext')).map(h => h.textContent);
"""


def _check_lines_without_visdoms_smoothing(driver, title: str) -> None:
    """Our line traces are drawn as lines and hover, but visdom offers no "~" button on them.

    The button smooths the decimated points drawn, not the series: wrong numbers.
    """
    panes = driver.execute_script(LINE_PANES_JS)
    assert [p["buttons"] for p in panes] == [0] * len(panes), panes
    modes = {mode for p in panes for mode in p["modes"]}
    assert modes == {"lines"}, panes  # Plotly reads our mode as plain lines
    labels = driver.execute_script(HOVER_JS, title)
    assert labels and all(label.strip() for label in labels), labels


def printed_url(pickle_dir: Path, server_url: str) -> str:
    """The URL ``run_visualizer_local.py --once`` prints on its ``visdom: `` line."""
    result = subprocess.run(
        [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(pickle_dir),
         "--server", server_url, "--once", "--no-start-server"],
        cwd=ROOT, capture_output=True, text=True, timeout=BROWSER_WAIT_S,
    )  # fmt: skip
    assert result.returncode == ExitCode.OK, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("visdom: ")]
    assert len(lines) == 1, result.stdout
    return lines[0].removeprefix("visdom: ")


def log_losses(store: Path, scale: float) -> None:
    with Recorder(store, flush_interval=0.05) as rec:
        for step in range(50):
            rec.log({"loss": scale / (step + 1)}, step=step)


def test_the_printed_url_opens_the_runs_page(tmp_path, visdom_server, chromium_driver, run_name):
    """One run: the URL is its env's page, with its plots on it (not visdom's empty main env)."""
    store = tmp_path / run_name / "pickle"
    log_losses(store, 1.0)
    url = printed_url(store, visdom_server.url)
    assert url == f"{visdom_server.url}/env/{run_name}"

    chromium_driver.get(url)
    plot = WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
        lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2 and p
    )
    assert plot["names"] == ["loss", "loss"] and plot["points"] == [50, 50]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert chromium_driver.save_screenshot(str(ARTIFACTS / "visualizer_printed_url_run.png"))
    assert [e for e in chromium_driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_the_printed_url_of_several_runs_opens_the_comparison(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """A directory of runs: the URL is the comparison env's page, a trace per run."""
    runs = tmp_path / run_name
    log_losses(runs / "a" / "pickle", 1.0)
    log_losses(runs / "b" / "pickle", 2.0)
    url = printed_url(runs, visdom_server.url)
    assert url == f"{visdom_server.url}/env/{run_name}_compare"

    chromium_driver.get(url)
    plot = WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
        lambda d: (p := plot_of(d, "train/loss: all runs")) and p["drawn"] == 4 and p
    )
    assert sorted(plot["names"]) == ["a", "a", "b", "b"] and plot["points"] == [50] * 4
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert chromium_driver.save_screenshot(str(ARTIFACTS / "visualizer_printed_url_compare.png"))
    assert [e for e in chromium_driver.get_log("browser") if e["level"] == "SEVERE"] == []


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
        with Recorder(self.store, flush_interval=0.05) as rec:
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
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
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
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_log_y_relative_time.png"))

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
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_zoom_kept.png"))

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
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_hidden_after_smoothing.png"))


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
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_hidden_after_x_axis.png"))
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
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_log_y_after_zoom.png"))


def test_the_bare_url_lists_the_runs_and_links_to_them(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """visdom's main env (the server's bare URL) indexes the runs; a link opens a run's plots."""
    runs = tmp_path / run_name
    log_losses(runs / "first" / "pickle", 1.0)
    log_losses(runs / "second" / "pickle", 2.0)
    Follower(str(runs), VisdomClient(visdom_server.endpoint)).run_once()
    driver = chromium_driver
    driver.get(visdom_server.url)
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    link = wait.until(lambda d: d.find_element(By.LINK_TEXT, "second"))
    assert "finished" in driver.page_source
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_main_index.png"))
    link.click()
    wait.until(lambda d: d.current_url.endswith("/env/second"))
    plot = wait.until(lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2 and p)
    assert plot["y_last"][0] == 2.0 / 50
