"""Headless Chromium at 1,400 px on a run logged with ``add_hparams`` (issue 48: "a run page's
hparams pane is mostly blank"): the hparams pane is as tall as its rows; on the runs table's
page, whose first row was half blank; and on the comparison's, whose table pane was twice as
tall as 3 runs' rows and cut 100 runs' last columns; measured on the panes' boxes as the page
lays them out."""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.test_browser_rows import PANE_BOXES_JS
from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.pages import BROWSER_WAIT_S, PANE_XPATH, screenshot
from tests.fixtures.servers.visdom_reading import following
from trainer import SummaryWriter
from visualizer.follower import Follower
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.visdom_client import VisdomClient
from workloads.many_runs import write_runs

SCREEN_PX = 1400  # the width the issue was seen at
# The pane's bar and padding above its text: what a pane holds besides its rows.
CHROME_PX = 60
CHECKBOXES = "//input[@type='checkbox']"
VIEW_AND_COMPARE = ("view (smoothing 0 to <1)", "compare")  # beside the comparison's table
# Runs compared: enough that some share a config, grouped by seed (its group column's labels
# name the config: the widest column), and more rows than a pane shows.
MANY = 40


def _panes_titled(driver: object, *titles: str) -> dict[str, dict]:
    """The page's panes of these ``titles`` by title, once all show and they stopped moving
    into place."""
    seen: list[dict] = []

    def ours(d: object) -> dict | None:
        boxes = d.execute_script(PANE_BOXES_JS)  # type: ignore[attr-defined]
        found = {b["title"]: b for b in boxes if b["title"] in titles}
        seen.append(found)
        return found if len(found) == len(titles) and seen[-2:-1] == [found] else None

    return WebDriverWait(driver, BROWSER_WAIT_S, poll_frequency=0.5).until(ours)


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


def test_the_runs_table_page_s_first_row_is_used_at_1400_px(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """Issue 48: at 1,400 px the runs table's filter and 'shown in the comparison' panes took
    ~700 px of the row above the table, the rest blank. Now one runs pane, its controls and
    then the checkboxes, stands beside the table, as tall, and the row is used to its right
    edge, on a page that holds other visualizers' tables too (the session's server)."""
    root = tmp_path / run_name
    write_small_runs(root, 4, steps=5, varied=True)
    Follower(str(root), VisdomClient(visdom_server.endpoint), env=run_name).run_once()
    driver = chromium_driver
    driver.set_window_size(SCREEN_PX, 900)
    driver.get(f"{visdom_server.url}/env/{INDEX_ENV}")
    titles = (f"filter, sort, page ({run_name})", f"runs: {root}")
    found = _panes_titled(driver, *titles)
    controls, table = found[titles[0]], found[titles[1]]
    driver.execute_script("window.scrollTo(0, arguments[0] - 60)", controls["top"])
    screenshot(driver, "pane_sizes_runs_table")
    width = driver.execute_script("return document.querySelector('.react-grid-layout').offsetWidth")
    assert abs(table["top"] - controls["top"]) < 2, "the table beside the runs pane"
    assert abs(table["height"] - controls["height"]) < 2, "as tall"
    assert table["left"] > controls["left"] + controls["width"] - 2, (controls, table)
    # The row is used: from the runs pane's left edge to the table's right one, 90% of the page.
    assert table["left"] + table["width"] - controls["left"] >= 0.9 * width, (found, width)
    boxes = driver.find_elements(By.XPATH, PANE_XPATH.format(title=titles[0]) + CHECKBOXES)
    assert len(boxes) == 4, "a checkbox per row, under the controls"


def _first_row(driver: object, runs: int) -> dict[str, dict]:
    """The comparison page's first row (its runs table, view and compare panes) by title, once
    the table lists ``runs`` runs and the panes stopped moving into place."""
    return _panes_titled(driver, f"runs compared ({runs})", *VIEW_AND_COMPARE)


def test_the_comparison_s_first_row_fits_3_runs_rows_and_40_runs_columns(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """Issue 48: 3 runs' table pane was 320 px tall around 142 px of rows (the first row's
    height was fixed); 100 runs grouped by seed (a long group column) showed 650 px of a
    745 px table, its last columns cut (40 as well). Now the row is as tall as the table's
    rows (at least the compare pane's five), the table as wide as its columns, the view and
    compare panes beside it narrower; on a page left open as the runs arrive too (it kept
    the sizes it opened with: visdom's page changed a pane's layout item in place)."""
    driver = chromium_driver
    driver.set_window_size(SCREEN_PX, 900)
    few = tmp_path / f"{run_name}-few"
    write_small_runs(few, 3, steps=5, varied=True)
    Follower(str(few), VisdomClient(visdom_server.endpoint), env=few.name).run_once()
    driver.get(f"{visdom_server.url}/env/{few.name}_compare")
    table = _first_row(driver, 3)["runs compared (3)"]
    screenshot(driver, "pane_sizes_compare_3")
    assert table["whole"] <= table["visible"], table
    assert table["height"] <= table["whole"] + CHROME_PX, "no blank half-pane under the rows"

    staging, many = tmp_path / "staging", tmp_path / f"{run_name}-many"
    write_runs(staging, MANY, points=5)
    many.mkdir()
    stores = sorted(staging.iterdir())
    for store in stores[:3]:
        store.rename(many / store.name)
    with following(many, visdom_server.endpoint, env=many.name, compare=MANY):
        driver.get(f"{visdom_server.url}/env/{many.name}_compare")
        _first_row(driver, 3)
        for store in stores[3:]:  # the page stays open as they arrive
            store.rename(many / store.name)
        row = _first_row(driver, MANY)
    screenshot(driver, "pane_sizes_compare_many")
    table, view, compare = (row[title] for title in (f"runs compared ({MANY})", *VIEW_AND_COMPARE))
    assert table["whole_width"] <= table["shown_width"], ("every column shown", table)
    assert table["scrolls"] and table["whole"] > table["visible"], "the rows scroll"
    assert view["top"] == compare["top"] == table["top"], ("one row", row)
    assert table["left"] + table["width"] < view["left"] < compare["left"], ("in order", row)
