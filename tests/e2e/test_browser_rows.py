"""Headless Chromium on what a newcomer sees of a run's and a comparison's page (issue 34's rows):
the options pane shows few rows whole and scrolls many, the options all runs share as a table, and each title
shown once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from tests.e2e.test_browser_page import log_run
from tests.fixtures.servers.pages import BROWSER_WAIT_S, screenshot
from visualizer.follower import Follower
from visualizer.layout import PANE_MARGIN, PLOT_SIZE
from visualizer.panes.values import value_text
from visualizer.visdom_client import VisdomClient

# Many options, as the trainer's CLI stores (its runs have some forty).
MANY_OPTIONS = {f"option_{i:02d}": i * 1.5 for i in range(30)}

# Per pane: its bar's title, its box, and its text content's visible and whole heights and widths.
PANE_BOXES_JS = """
return Array.from(document.querySelectorAll('.react-grid-item')).map(item => {
  const bar = item.querySelector('.bar');
  const box = item.getBoundingClientRect();
  const text = item.querySelector('.content-text');
  return {title: bar ? Array.from(bar.querySelectorAll(':scope > div')).map(d => d.textContent.trim()).pop() || '' : '',
          top: box.top, left: box.left, width: box.width, height: box.height,
          visible: text ? text.clientHeight : null, whole: text ? text.scrollHeight : null,
          shown_width: text ? text.clientWidth : null, whole_width: text ? text.scrollWidth : null,
          scrolls: text ? getComputedStyle(text).overflowY === 'auto' : null};
});
"""


def many_option_runs(runs: Path) -> None:
    """Two runs of :func:`log_run` (no images), each with :data:`MANY_OPTIONS` besides its own."""
    for name, lr, batch in (("lr-0.1", 0.1, 16), ("lr-0.01", 0.01, 32)):
        store = runs / name / "pickle"
        log_run(store, lr, batch, images=0)
        with Recorder(store, options={**MANY_OPTIONS, "lr": lr, "batch_size": batch, "seed": 7}):
            pass  # a second session: its options replace the first's


def draw_runs(runs: Path, visdom_server: Any, env: str) -> None:
    """:func:`many_option_runs` under ``runs``, drawn once into envs prefixed ``env``."""
    many_option_runs(runs)
    Follower(str(runs), VisdomClient(visdom_server.endpoint), env=env).run_once()


def open_page(driver: Any, url: str, panes: int) -> list[dict]:
    """The page at ``url`` once it shows ``panes`` panes and they stopped moving into place."""
    driver.get(url)
    seen: list[list[dict]] = []

    def settled(d: Any) -> list[dict] | None:
        boxes = d.execute_script(PANE_BOXES_JS)
        seen.append(boxes)
        return boxes if len(boxes) == panes and seen[-2:-1] == [boxes] else None

    return WebDriverWait(driver, BROWSER_WAIT_S, poll_frequency=0.3).until(settled)


def test_few_options_show_whole_many_scroll_and_the_first_row_stays_equal(
    tmp_path, visdom_server, chromium_driver, run_name
):
    runs = tmp_path / run_name
    draw_runs(runs, visdom_server, run_name)
    log_run(runs / "few" / "pickle", 0.5, 8, images=0)  # three options
    Follower(str(runs), VisdomClient(visdom_server.endpoint), env=run_name).run_once()
    few = open_page(chromium_driver, f"{visdom_server.url}/env/{run_name}_few", 6)
    options = next(b for b in few if b["title"].endswith(": options"))
    assert options["whole"] <= options["visible"], "the options pane's rows are cut"
    boxes = open_page(chromium_driver, f"{visdom_server.url}/env/{run_name}_lr-0.1", 6)
    screenshot(chromium_driver, "rows_options_pane")
    options = next(b for b in boxes if b["title"].endswith(": options"))
    # Thirty-odd options scroll in a pane no taller than a plot: the plots stay in view.
    assert options["height"] <= PLOT_SIZE[1] + 30 and options["scrolls"], options  # + its bar
    first_row = [b for b in boxes if b["top"] == options["top"]]
    assert len(first_row) == 3 and {b["height"] for b in first_row} == {options["height"]}
    assert min(b["top"] for b in boxes if b["top"] > options["top"]) < 800, "a plot in view"


def test_the_options_all_runs_share_are_a_table_on_the_comparison_page(
    tmp_path, visdom_server, chromium_driver, run_name
):
    draw_runs(tmp_path / run_name, visdom_server, run_name)
    driver = chromium_driver
    driver.get(f"{visdom_server.url}/env/{run_name}_compare")
    shared = WebDriverWait(driver, BROWSER_WAIT_S).until(
        lambda d: d.find_elements(By.XPATH, "//table[.//th[text()='same in every run']]")
    )[0]
    rows = [r.text.split() for r in shared.find_elements(By.TAG_NAME, "tr")]
    assert rows[0] == ["same", "in", "every", "run", "value"]
    assert rows[1:] == [[name, value_text(value, 100)] for name, value in MANY_OPTIONS.items()] + [
        ["seed", "7"]
    ]
    screenshot(driver, "rows_shared_options")


# Per pane: its title, and how many of the texts drawn on the page in it read that title
# (the pane's bar, a plot's own title).
TITLES_SHOWN_JS = """
return Array.from(document.querySelectorAll('.react-grid-item')).map(item => {
  const name = Array.from(item.querySelectorAll('.bar > div')).pop();
  const title = name ? name.textContent.trim() : '';
  const texts = [name, ...item.querySelectorAll('.gtitle')];
  return [title, texts.filter(el => el && el.textContent.trim() === title
                                   && el.getClientRects().length > 0).length];
});
"""


def test_every_title_is_shown_once(tmp_path, visdom_server, chromium_driver, run_name):
    draw_runs(tmp_path / run_name, visdom_server, run_name)
    driver = chromium_driver
    for env, panes in ((f"{run_name}_lr-0.1", 6), (f"{run_name}_compare", 7)):
        open_page(driver, f"{visdom_server.url}/env/{env}", panes)
        shown = WebDriverWait(driver, BROWSER_WAIT_S).until(
            lambda d: (t := d.execute_script(TITLES_SHOWN_JS)) and all(n > 0 for _, n in t) and t
        )
        assert [title for title, n in shown if n != 1] == [], shown
        screenshot(driver, f"rows_titles_{env.rpartition('_')[2]}")


_HEADER = (": status", "view (", ": options")


def _page_at(driver: Any, width: int, columns: int) -> tuple[int, list[dict]]:
    """The open page resized to ``width`` (never reloaded) once its plot panes stand still in
    ``columns`` columns that reach across the grid: the grid's width and the panes' boxes."""
    driver.set_window_size(width, 900)
    seen: list[list[dict]] = []

    def filled(d: Any) -> tuple[int, list[dict]] | None:
        boxes = d.execute_script(PANE_BOXES_JS)
        seen.append(boxes)
        grid = d.execute_script("return document.querySelector('.react-grid-layout').offsetWidth")
        plots = {round(b["width"]) for b in boxes if not any(h in b["title"] for h in _HEADER)}
        if seen[-2:-1] != [boxes] or len(plots) != 1:
            return None
        # The plots' slots (each pane and its margin), and the grid's margin, fill its width
        # but for a pixel a column that the page gives to rounding.
        used = columns * (plots.pop() + PANE_MARGIN) + PANE_MARGIN
        return (grid, boxes) if grid - 2 * columns <= used <= grid else None

    return WebDriverWait(driver, BROWSER_WAIT_S, poll_frequency=0.3).until(filled)


def test_panes_fill_the_page_width_in_whole_columns_as_the_window_is_resized(
    tmp_path, visdom_server, chromium_driver, run_name
):
    """At 1600 px two 600 px plots left 380 px blank: the plot panes now fill whole columns
    across the page, at each width the window is resized to, and the first row's three small
    panes still make one row wherever two columns fit."""
    draw_runs(tmp_path / run_name, visdom_server, run_name)
    driver = chromium_driver
    open_page(driver, f"{visdom_server.url}/env/{run_name}_lr-0.1", 6)
    for width, columns in ((1600, 2), (1920, 3), (1000, 1), (1280, 2)):
        grid, boxes = _page_at(driver, width, columns)
        screenshot(driver, f"rows_fill_{width}")
        header = [b for b in boxes if any(h in b["title"] for h in _HEADER)]
        assert columns == 1 or len({b["top"] for b in header}) == 1, (width, header)
        assert all(b["left"] + b["width"] <= grid for b in boxes), (width, grid, boxes)
        assert all(b["width"] >= PLOT_SIZE[0] for b in boxes if b not in header), boxes
