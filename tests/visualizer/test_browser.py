"""A headless Chromium shows the follower's plots, including points appended while it watches,
on the page the printed URL opens and behind the links of the bare URL's index of runs.

The view controls on the page (smoothing, log y, time axes) are in test_browser_controls.py."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from run_core.exit_codes import ExitCode
from tests.fixtures.servers.pages import (
    BROWSER_WAIT_S,
    ROOT,
    plot_of,
    screenshot,
)
from tests.fixtures.servers.visdom_reading import following, recorder
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient


def test_chromium_renders_the_runs_plots_and_live_appends(
    tmp_path, visdom_server, chromium_driver, run_name
):
    store = tmp_path / run_name / "pickle"
    with recorder(store) as rec:
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
        with recorder(store) as rec:
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

    assert screenshot(driver, "visualizer_plot")
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
    with recorder(store) as rec:
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
    assert screenshot(chromium_driver, "visualizer_printed_url_run")
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
        lambda d: (p := plot_of(d, "train losses: loss (2 runs)")) and p["drawn"] == 4 and p
    )
    assert sorted(plot["names"]) == ["a", "a", "b", "b"] and plot["points"] == [50] * 4
    assert screenshot(chromium_driver, "visualizer_printed_url_compare")
    assert [e for e in chromium_driver.get_log("browser") if e["level"] == "SEVERE"] == []


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
    assert screenshot(driver, "visualizer_main_index")
    link.click()
    wait.until(lambda d: d.current_url.endswith("/env/second"))
    plot = wait.until(lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2 and p)
    assert plot["y_last"][0] == 2.0 / 50
