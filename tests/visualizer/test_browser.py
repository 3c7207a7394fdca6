"""A headless Chromium shows the follower's plots, including points appended while it watches."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from tests.visualizer.conftest import following
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
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
