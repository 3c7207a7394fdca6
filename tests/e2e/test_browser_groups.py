"""Headless Chromium on a sweep's comparison page: seeds drawn as one curve with a min-max band
per group, and the parallel coordinates of the config beside the runs table."""

from __future__ import annotations

import numpy as np
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, choose, plot_of
from tests.fixtures.servers.visdom_reading import following
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient

# Per plot: its trace types, the fills drawn (a band each), and a parcoords plot's axis titles.
DRAWN_JS = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).map(div => ({
  types: (div.data || []).map(t => t.type),
  fills: Array.from(div.querySelectorAll('.scatterlayer path.js-fill'))
              .filter(p => (p.getAttribute('d') || '').length > 20).length,
  axes: Array.from(div.querySelectorAll('.axis-title')).map(t => t.textContent),
}));
"""


def log_sweep(root, steps: int = 300) -> None:
    """Three seeds of two learning rates: noisy decaying losses, each seed a bit apart."""
    for lr in (0.1, 0.01):
        for seed in (1, 2, 3):
            rng = np.random.default_rng(seed)
            options = {"lr": lr, "batch_size": 32, "seed": seed, "optimizer": "adam"}
            with Recorder(root / f"lr{lr}-seed{seed}" / "pickle", options=options) as rec:
                for step in range(steps):
                    loss = lr * 30 / (step + 10) * (1 + 0.15 * seed) + 0.02 * rng.random()
                    rec.log({"loss": loss}, step=step)
                    if step % 50 == 49:
                        rec.log({"accuracy": 1 - loss}, step=step, group="val")


def test_seeds_draw_as_a_band_per_group_beside_parallel_coordinates(
    tmp_path, visdom_server, chromium_driver, run_name
):
    root = tmp_path / run_name
    log_sweep(root)
    Follower(str(root), VisdomClient(visdom_server.endpoint)).run_once()

    driver = chromium_driver
    driver.set_window_size(1280, 1300)
    driver.get(f"{visdom_server.url}/env/{run_name}_compare")
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    plot = wait.until(lambda d: plot_of(d, "train losses: loss (6 runs)"))
    assert set(plot["names"]) == {"lr=0.01 (3 runs)", "lr=0.1 (3 runs)"}
    # A band (min, max) and the mean's raw and smoothed curves per group.
    assert len(plot["names"]) == 8
    drawn = wait.until(
        lambda d: (
            (found := [p for p in d.execute_script(DRAWN_JS) if p["fills"] >= 2])
            and (coords := [p for p in d.execute_script(DRAWN_JS) if "parcoords" in p["types"]])
            and {"lr", "train/loss (best)"} <= set(coords[0]["axes"])
            and (found, coords)
        )
    )
    assert "seed" not in drawn[1][0]["axes"], "grouped by seed: its axis is left out"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_compare_groups.png"))
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


# Before the page's own scripts: the order Plotly is asked to draw the panes in.
DRAW_ORDER_JS = """
window.rtmOrder = [];
let plotly;
Object.defineProperty(window, 'Plotly', {configurable: true, get() { return plotly; }, set(p) {
  plotly = p;
  const newPlot = p.newPlot;
  p.newPlot = function (div, data, ...rest) {
    window.rtmOrder.push((data || []).some(t => t.type === 'parcoords') ? 'parcoords' : 'lines');
    return newPlot.call(this, div, data, ...rest);
  };
}});
"""


def test_the_parallel_coordinates_are_drawn_after_the_line_plots(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """Plotly draws them with WebGL, in software without a GPU (3 s for 100 runs), on the one
    thread that draws every pane: the line plots waited for them."""
    root = tmp_path / run_name
    log_sweep(root, steps=60)
    Follower(str(root), VisdomClient(visdom_server.endpoint)).run_once()
    driver = chromium_driver
    hook = driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument", {"source": DRAW_ORDER_JS}
    )
    try:
        driver.get(f"{visdom_server.url}/env/{run_name}_compare")
        order = WebDriverWait(driver, BROWSER_WAIT_S).until(
            lambda d: (o := d.execute_script("return window.rtmOrder")) and "parcoords" in o and o
        )
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", hook)
    first = order.index("parcoords")
    assert order[:first].count("lines") == 2, order  # train losses and validation, then it
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_a_grouping_chosen_on_the_page_regroups_every_window(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """The compare pane's "group by" (the key a group's runs differ by): seed (the default: a
    band per learning rate), then none (a curve a run), then lr (a band per seed)."""
    root = tmp_path / run_name
    log_sweep(root, steps=60)
    driver = chromium_driver
    wait = WebDriverWait(
        driver, BROWSER_WAIT_S, ignored_exceptions=[StaleElementReferenceException]
    )
    title = "train losses: loss (6 runs)"
    with following(root, visdom_server.endpoint):
        driver.get(f"{visdom_server.url}/env/{run_name}_compare")
        plot = wait.until(lambda d: (p := plot_of(d, title)) and p)
        assert set(plot["names"]) == {"lr=0.01 (3 runs)", "lr=0.1 (3 runs)"}
        choose(driver, "group by", "none", pane="compare")
        wait.until(
            lambda d: (
                (p := plot_of(d, title))
                and set(p["names"])
                == {f"lr{lr}-seed{seed}" for lr in (0.1, 0.01) for seed in (1, 2, 3)}
            )
        )
        choose(driver, "group by", "lr", pane="compare")
        wait.until(
            lambda d: (
                (p := plot_of(d, title))
                and set(p["names"]) == {f"seed={seed} (2 runs)" for seed in (1, 2, 3)}
            )
        )
