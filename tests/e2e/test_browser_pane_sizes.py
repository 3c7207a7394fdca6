"""Headless Chromium at 1,400 px on a run logged with ``add_hparams`` (issue 48: "a run page's
hparams pane is mostly blank"): the hparams pane is as tall as its rows, measured on the
panes' boxes as the page lays them out."""

from __future__ import annotations

from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.test_browser_rows import PANE_BOXES_JS
from tests.fixtures.servers.pages import BROWSER_WAIT_S, screenshot
from trainer import SummaryWriter
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient

SCREEN_PX = 1400  # the width the issue was seen at
# The pane's bar and padding above its text: what a pane holds besides its rows.
CHROME_PX = 60


def test_the_hparams_pane_is_as_tall_as_its_rows(
    tmp_path, visdom_server, chromium_driver, run_name
):
    store = tmp_path / run_name / "pickle"
    with SummaryWriter(store) as writer:
        for step in range(3):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_hparams({"lr": 0.01, "seed": 3}, {"hparam/accuracy": 0.9}, run_name="r0")
    Follower(str(tmp_path), VisdomClient(visdom_server.endpoint), env=run_name).run_once()
    driver = chromium_driver
    driver.set_window_size(SCREEN_PX, 900)
    driver.get(f"{visdom_server.url}/env/{run_name}_{run_name}")

    seen: list[list[dict]] = []

    def hparams(d: object) -> dict | None:
        """The hparams pane's box once the page's panes stopped moving into place."""
        boxes = d.execute_script(PANE_BOXES_JS)  # type: ignore[attr-defined]
        seen.append(boxes)
        found = [b for b in boxes if b["title"].endswith(": hparams") and b["whole"] is not None]
        return found[0] if found and seen[-2:-1] == [boxes] else None

    pane = WebDriverWait(driver, BROWSER_WAIT_S, poll_frequency=0.5).until(hparams)
    driver.execute_script("window.scrollTo(0, arguments[0] - 100)", pane["top"])
    screenshot(driver, "pane_sizes_hparams")
    # One row and its header: every row shows, and the pane is not a blank plot-sized box
    # (it was 400 px tall around 70 px of rows).
    assert pane["whole"] <= pane["visible"], pane
    assert pane["height"] <= pane["whole"] + CHROME_PX, pane
