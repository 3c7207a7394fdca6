"""Headless Chromium on a 10-group sweep's comparison (issue 48): ten learning rates of two seeds
each, every group told apart by its colour then its dash, legends in numeric order, and the
title counting the runs drawn."""

from __future__ import annotations

from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, plot_of
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient

LRS = (0.3, 0.1, 0.05, 0.03, 0.01, 0.005, 0.003, 0.001, 0.0005, 0.0001)
TITLE = "train losses: loss (20 runs)"

# Each legend entry of the plot titled arguments[0]: its name, colour and dash.
STYLES_JS = """
const g = Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find(d => d.layout && (d.layout.title.text || d.layout.title) === arguments[0]);
return g && g._fullData.filter(t => t.showlegend !== false && t.type === 'scatter')
  .map(t => [t.name, t.line.color, t.line.dash]);
"""


def test_ten_groups_are_told_apart_and_listed_in_numeric_order(
    tmp_path, visdom_server, chromium_driver, run_name
):
    root = tmp_path / run_name
    for lr in LRS:
        for seed in (1, 2):
            options = {"lr": lr, "seed": seed}
            with Recorder(root / f"lr{lr}-seed{seed}" / "pickle", options=options) as rec:
                for step in range(10):
                    rec.log({"loss": lr * 30 / (step + 10) * (1 + 0.1 * seed)}, step=step)
    Follower(str(root), VisdomClient(visdom_server.endpoint)).run_once()
    driver = chromium_driver
    driver.set_window_size(1280, 1300)
    driver.get(f"{visdom_server.url}/env/{run_name}_compare")
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    wait.until(lambda d: (p := plot_of(d, TITLE)) and p["drawn"])
    styles = wait.until(lambda d: d.execute_script(STYLES_JS, TITLE))
    names = [name for name, _color, _dash in styles]
    assert names == [f"lr={lr} (2 runs)" for lr in sorted(LRS)], names
    assert len({(color, dash) for _name, color, dash in styles}) == 10, styles
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_ten_groups.png"))
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
