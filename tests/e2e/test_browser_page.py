"""Headless Chromium on the page a person opens: the comparison of a sweep (``--runs``, every
group, the hyperparameters table), image history, and the same window order live and replayed."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from remote_train_monitor import SummaryWriter
from snapshot_store import Recorder
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, choose, plot_of, type_into
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from visualizer.follower import Follower
from visualizer.panes.compare import Selection
from visualizer.visdom_client import VisdomClient

# The page's windows, top to bottom then left to right, as laid out: (title, top, left).
LAYOUT_JS = """
return Array.from(document.querySelectorAll('.react-grid-item')).map(item => {
  const bar = item.querySelector('.bar');
  const box = item.getBoundingClientRect();
  // The bar reads "X", a download arrow, then the title, a line each.
  return {title: bar ? Array.from(bar.querySelectorAll(':scope > div')).map(d => d.textContent.trim()).pop() || '' : '', top: box.top,
          left: box.left, width: box.width, height: box.height};
}).sort((a, b) => a.top - b.top || a.left - b.left);
"""


def _settled(driver) -> list[dict]:
    """The panes once the page stopped moving them (its layout animates into place)."""
    before = driver.execute_script(LAYOUT_JS)
    time.sleep(0.5)
    after = driver.execute_script(LAYOUT_JS)
    return after if after == before else []


def log_run(store: Path, lr: float, batch: int, steps: int = 60, images: int = 3) -> None:
    """A small run with options, train/val losses, a metric and a 4-row image grid."""
    rng = np.random.default_rng(int(lr * 1000))
    with Recorder(store, options={"lr": lr, "batch_size": batch, "seed": 7}) as rec:
        for step in range(steps):
            rec.log({"loss": lr * 10 / (step + 1) + 0.01 * rng.random()}, step=step)
            if step % 20 == 19:
                rec.log({"loss": lr * 12 / (step + 1)}, step=step, group="val")
                rec.log({"accuracy": 1 - lr / (step + 1)}, step=step, group="metrics")
        for i in range(images):  # four rows of eight (as TensorBoard tiles): the 4th must show
            grid = np.full((32, 3, 32, 32), (i + 1) / (images + 1), dtype=np.float32)
            rec.log_image("predictions", grid, step=20 * (i + 1), dataformats="NCHW")


def test_runs_selects_every_group_is_compared_and_the_table_lists_the_options(
    tmp_path, visdom_server, chromium_driver, run_name
):
    runs = tmp_path / run_name
    log_run(runs / "lr-0.1" / "pickle", 0.1, 16)
    log_run(runs / "lr-0.01" / "pickle", 0.01, 32)
    log_run(runs / "baseline" / "pickle", 0.05, 16)
    follower = Follower(
        str(runs),
        VisdomClient(visdom_server.endpoint),
        selection=Selection("^lr-", ("val", "loss")),
    )
    follower.run_once()
    assert set(follower.feeds) == {"lr-0.1", "lr-0.01"}, "--runs leaves baseline out"

    driver = chromium_driver
    driver.get(f"{visdom_server.url}/env/{run_name}_compare")
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    # Two runs: a raw and a smoothed trace each; val and metrics, 3 points a run, raw only.
    for title, drawn in (
        ("train losses: loss (2 runs)", 4),
        ("validation: loss (2 runs)", 2),
        ("metrics: accuracy (2 runs)", 2),
    ):
        plot = wait.until(
            lambda d, t=title, n=drawn: (p := plot_of(d, t)) and p["drawn"] == n and p
        )
        assert sorted(set(plot["names"])) == ["lr-0.01", "lr-0.1"]
    # Each run in one color in every window.
    colors = driver.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot')).map(div =>"
        "  Object.fromEntries(div.data.filter(t => t.type === 'scatter' && t.showlegend !== false)"
        "    .map(t => [t.name, t.line.color])));"
    )
    assert len({tuple(sorted(c.items())) for c in colors if c}) == 1, colors  # parcoords: {}

    table = wait.until(lambda d: d.find_element(By.XPATH, "//table[.//th[text()='lr']]"))
    rows = [r.text for r in table.find_elements(By.TAG_NAME, "tr")]
    # Sorted by val/loss's best value: the smaller learning rate has the smaller loss.
    assert rows[0].split() == ["run", "val/loss", "(best)", "batch_size", "lr"]
    assert rows[1].startswith("lr-0.01") and rows[1].endswith("32 0.01"), rows
    assert rows[2].startswith("lr-0.1") and rows[2].endswith("16 0.1"), rows
    shared = driver.find_element(By.XPATH, "//table[.//th[text()='same in every run']]")
    assert [r.text for r in shared.find_elements(By.TAG_NAME, "tr")][1:] == ["seed 7"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_compare_sweep.png"))
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_image_history_shows_an_earlier_step(tmp_path, visdom_server, chromium_driver, run_name):
    store = tmp_path / run_name / "pickle"
    log_run(store, 0.1, 16)
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()
    driver = chromium_driver
    driver.get(f"{visdom_server.url}/env/{run_name}")
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    wait.until(lambda d: "predictions @ step 60" in d.page_source)
    slider = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "input[type=range]"))
    assert slider.get_attribute("max") == "2"  # three snapshots: steps 20, 40, 60
    driver.execute_script(
        "const s = arguments[0];"
        "const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;"
        "set.call(s, '0'); s.dispatchEvent(new Event('input', {bubbles: true}));"
        "s.dispatchEvent(new Event('change', {bubbles: true}));",
        slider,
    )
    wait.until(lambda d: "predictions @ step 20" in d.page_source)
    shown = driver.execute_script(  # the caption once: visdom also printed it over the image
        "return Array.from(document.querySelectorAll('.react-grid-item *'))"
        ".filter(e => e.children.length === 0 && e.offsetParent !== null"
        " && e.textContent.trim() === 'predictions @ step 20').map(e => e.outerHTML);"
    )
    assert len(shown) == 1, shown
    # The whole 4x4 grid shows: neither the pane nor a box inside it cuts the image.
    image, box = driver.execute_script(
        "const img = document.querySelector('img[src^=\"data:image/png\"]');"
        "let bottom = Infinity, el = img.parentElement;"
        "while (el && !el.classList.contains('react-grid-item')) {"
        "  if (getComputedStyle(el).overflow !== 'visible')"
        "    bottom = Math.min(bottom, el.getBoundingClientRect().bottom);"
        "  el = el.parentElement; }"
        "bottom = Math.min(bottom, el.getBoundingClientRect().bottom);"
        "return [img.getBoundingClientRect().bottom, bottom];"
    )
    assert image <= box, (image, box)
    driver.execute_script(
        "document.querySelector('img[src^=\"data:image/png\"]').scrollIntoView({block: 'center'});"
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_image_history.png"))


def test_windows_come_in_the_same_order_live_and_replayed(
    tmp_path, visdom_server, chromium_driver, reader, run_name
):
    """Live, validation and images arrive after the first losses; the page still matches a replay."""
    live = tmp_path / "live" / run_name / "pickle"
    env = f"{run_name}-live"

    def drawn(win: str) -> None:
        wait_until(lambda: reader.has_window(env, win))

    with (
        following(live, visdom_server.endpoint, env=env),
        Recorder(live, options={"lr": 0.1}, flush_interval=0.05) as rec,
    ):
        rec.log({"loss": 1.0}, step=0)
        rec.flush()
        drawn("train")
        # Two images in a row make a 480 px pane: a 640 px one beside a 600 px plot is as
        # wide as the page, and whether it fits then hangs on the scroll bar (page layout).
        rec.log_image("predictions", np.zeros((2, 3, 8, 8)), step=1, dataformats="NCHW")
        rec.flush()
        drawn("image_images_predictions")
        rec.log({"accuracy": 0.5}, step=1, group="metrics")
        rec.log({"loss": 0.8}, step=1, group="val")
        rec.flush()
        drawn("validation")
    Follower(str(live), VisdomClient(visdom_server.endpoint), env=f"{run_name}-replay").run_once()

    # The page lays windows out in the server's order (each window's "i").
    orders = {}
    for kind in ("live", "replay"):
        windows = reader.windows(f"{run_name}-{kind}")
        orders[kind] = sorted(windows, key=lambda win, w=windows: w[win]["i"])
    assert orders["live"] == orders["replay"]
    assert orders["live"] == [
        "status", "view", "options", "train", "validation", "metrics", "image_images_predictions"
    ]  # fmt: skip

    driver = chromium_driver
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    places = {}
    for kind in ("live", "replay"):
        driver.get(f"{visdom_server.url}/env/{run_name}-{kind}")
        panes = wait.until(lambda d: len(t := _settled(d)) == 7 and t)
        assert driver.save_screenshot(str(ARTIFACTS / f"visualizer_order_{kind}.png"))
        titles = [pane["title"] for pane in panes]  # top to bottom, left to right
        assert titles[:3] == [
            f"{run_name}: status",
            "view (smoothing 0 to <1)",
            f"{run_name}: options",
        ]
        assert titles[3] == "train losses", titles
        # Where each pane is and its size, its title made the same in both envs.
        places[kind] = [
            (pane["title"].replace(f"{run_name}: ", ""), pane["top"], pane["left"],
             pane["width"], pane["height"])
            for pane in panes
        ]  # fmt: skip
    # Opened after the run (a page that watched the run live can differ: see docs/viewer.md).
    assert places["live"] == places["replay"]
    image = next(place for place in places["live"] if place[0] == "predictions")
    plot = next(place for place in places["live"] if place[0] == "train losses")
    assert image[3] == plot[3], "the image pane is as wide as the plot column"


def test_the_compare_pane_selects_runs_and_sorts_and_relative_time_overlays_them(
    tmp_path, visdom_server, chromium_driver, run_name
):
    runs = tmp_path / run_name
    log_run(runs / "lr-0.1" / "pickle", 0.1, 16, images=0)
    log_run(runs / "lr-0.01" / "pickle", 0.01, 32, images=0)
    log_run(runs / "lr-0.05" / "pickle", 0.05, 16, images=0)
    driver = chromium_driver
    # The table is drawn anew as the sort and the order change: a row read may be gone.
    wait = WebDriverWait(
        driver, BROWSER_WAIT_S, ignored_exceptions=[StaleElementReferenceException]
    )
    with following(runs, visdom_server.endpoint):
        driver.get(f"{visdom_server.url}/env/{run_name}_compare")
        wait.until(
            lambda d: (p := plot_of(d, "train losses: loss (3 runs)")) and len(p["names"]) == 6
        )

        type_into(driver, "runs (regex)", "0\\.0")  # lr-0.01 and lr-0.05
        plot = wait.until(
            lambda d: (
                (p := plot_of(d, "train losses: loss (2 runs)")) and len(p["names"]) == 4 and p
            )
        )
        assert sorted(set(plot["names"])) == ["lr-0.01", "lr-0.05"]
        assert wait.until(lambda d: "runs compared (2)" in d.page_source)

        choose(driver, "sort table by", "val/loss")
        choose(driver, "order", "descending")
        # The order comes after the sort: wait for both, not for the sort alone.
        wait.until(
            lambda d: (
                (rows := d.find_elements(By.XPATH, "//table[.//th[text()='lr']]//tr"))
                and "val/loss" in rows[0].text
                and rows[1].text.startswith("lr-0.05")  # the larger last val/loss first
            )
        )

        choose(driver, "x axis", "relative time")
        plot = wait.until(
            lambda d: (p := plot_of(d, "validation: loss (2 runs)"))
            and p["x_axis"]["title"].startswith("time since start") and p["drawn"] == 2 and p
        )  # fmt: skip
        assert max(plot["x_last"]) < 600, "each run counts from its own start"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "visualizer_compare_pane.png"))


def test_kept_names_are_grouped_into_windows_and_shown_as_logged(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """The names Lightning, the HF Trainer (TensorBoard's tags), Accelerate and the TensorBoard
    tutorial log, as they are stored: windows by the display rule, traces by the logged name."""
    store = tmp_path / run_name / "pickle"
    with SummaryWriter(store) as writer:
        for step in range(40):
            decay = 1 / (step + 1)
            for tag, value in {
                "train/loss": decay,  # HF
                "train/learning_rate": 0.1 * decay,
                "loss": 1.2 * decay,  # Lightning: two names at one step, both kept
                "train_loss": 1.1 * decay,
                "g_loss": 0.9 + 0.1 * decay,
                "accuracy": 1 - decay,  # Accelerate's tracking example
                "Loss/train": 2 * decay,  # the TensorBoard tutorial
                "Loss/test": 2.5 * decay,
            }.items():
                writer.add_scalar(tag, value, step)
            if step % 10 == 9:
                writer.add_scalar("eval/loss", 1.3 * decay, step)
                writer.add_scalar("val_loss_step", 1.4 * decay, step)
                writer.add_scalar("train/epoch", step / 10, step)
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()

    driver = chromium_driver
    driver.get(f"{visdom_server.url}/env/{run_name}")
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    expected = {
        "train losses": ["g_loss", "loss", "train/loss", "train_loss"],
        "validation": ["eval/loss", "val_loss_step"],
        "learning rate": ["train/learning_rate"],
        "accuracy": ["accuracy"],
        "Loss": ["test", "train"],
        "train/epoch": ["train/epoch"],
    }
    for title, names in expected.items():
        plot = wait.until(lambda d, t=title: plot_of(d, t))
        assert sorted(set(plot["names"])) == names, title
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(1280, 1600)  # every window in the picture
    time.sleep(1)
    assert driver.save_screenshot(str(ARTIFACTS / "visualizer_kept_names.png"))
