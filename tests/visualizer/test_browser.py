"""A headless Chromium shows the follower's plots, including points appended while it watches."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from snapshot_store.exit_codes import ExitCode
from tests.visualizer.conftest import following
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
BROWSER_WAIT_S = 60  # a bound on waiting, not a speed expectation

# Per plot on the page: its title, points per trace as plotly computed them for
# drawing (calcdata), and how many line paths were actually drawn with a shape.
PLOTS_JS = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).map(div => ({
  title: div.layout && div.layout.title && (div.layout.title.text || div.layout.title),
  names: (div.data || []).map(t => t.name),
  points: (div.calcdata || []).map(c => c.length),
  drawn: Array.from(div.querySelectorAll('.scatterlayer .trace path.js-line'))
              .filter(p => (p.getAttribute('d') || '').length > 20).length,
}));
"""


def _plot(driver, title: str) -> dict | None:
    return next((p for p in driver.execute_script(PLOTS_JS) if p["title"] == title), None)


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
    plot = wait.until(lambda d: (p := _plot(d, "train losses")) and p["drawn"] == 2 and p)
    assert sorted(plot["names"]) == ["aux", "loss"] and plot["points"] == [120, 120]
    assert wait.until(lambda d: (p := _plot(d, "learning rate")) and p["points"] == [120])

    # The page stays open while the run goes on: appended points reach the browser.
    with following(store, visdom_server.endpoint):
        with Recorder(store, flush_interval=0.05) as rec:
            for step in range(120, 180):
                rec.log({"loss": 0.1, "aux": 0.2}, step=step)
        plot = wait.until(
            lambda d: (p := _plot(d, "train losses")) and p["points"] == [180, 180] and p
        )
    assert plot["drawn"] == 2
    images = driver.execute_script(
        "return document.querySelectorAll('img[src^=\"data:image/png\"]').length"
    )
    assert images >= 1
    assert "FINISHED" in driver.page_source

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_plot.png"))
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


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
        lambda d: (p := _plot(d, "train losses")) and p["drawn"] == 1 and p
    )
    assert plot["names"] == ["loss"] and plot["points"] == [50]
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
        lambda d: (p := _plot(d, "train loss: all runs")) and p["drawn"] == 2 and p
    )
    assert sorted(plot["names"]) == ["a", "b"] and plot["points"] == [50, 50]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert chromium_driver.save_screenshot(str(ARTIFACTS / "visualizer_printed_url_compare.png"))
    assert [e for e in chromium_driver.get_log("browser") if e["level"] == "SEVERE"] == []
