"""Headless Chromium on the runs table of a 250-run sweep (visdom's main env): filtered (by name
and by an expression over the config), sorted (by a config column too) and paged from its pane
as a person would, and a run's link leading to its drawn page."""

from __future__ import annotations

from typing import Any

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.pages import (
    ARTIFACTS,
    BROWSER_WAIT_S,
    choose,
    plot_of,
    plots,
    tick,
    type_into,
)
from tests.fixtures.servers.visdom_reading import following
from visualizer.panes.run_rows import COMPARED
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.sources.download import CsvDownloads

RUNS = 250

# The cells of each row of the table in the pane titled arguments[0] (the header first).
ROWS_JS = """
const item = Array.from(document.querySelectorAll('.react-grid-item'))
  .find(i => (i.querySelector('.bar') || {innerText: ''}).innerText.includes(arguments[0]));
if (!item) return null;
return {text: item.innerText, rows: Array.from(item.querySelectorAll('tr'))
  .map(tr => Array.from(tr.children).map(td => td.innerText.trim()))};
"""


def _shot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / f"runs_table_{name}.png"))


def test_the_runs_pane_filters_sorts_and_pages_and_a_link_opens_the_run(
    tmp_path, visdom_server, chromium_driver, run_name
):
    root = tmp_path / run_name
    write_small_runs(root, RUNS, varied=True)
    driver, wait = chromium_driver, WebDriverWait(chromium_driver, BROWSER_WAIT_S)
    table, pane = f"runs: {root}", f"filter, sort, page ({root.name})"

    def shown(*needles: str) -> dict:
        """The table once its text holds every one of ``needles``."""
        try:
            return wait.until(
                lambda d: (
                    (t := d.execute_script(ROWS_JS, table))
                    and all(n in t["text"] for n in needles)
                    and t
                )
            )
        except TimeoutException:
            page = driver.execute_script(ROWS_JS, table)
            raise AssertionError(f"{needles} not in {page and page['text'][:600]!r}") from None

    def names(page: dict) -> list[str]:
        return [row[0] for row in page["rows"][1:]]

    with (
        CsvDownloads() as downloads,
        following(root, visdom_server.endpoint, env=run_name, downloads=downloads),
    ):
        driver.get(f"{visdom_server.url}/env/{INDEX_ENV}")
        page = shown(f"{RUNS} runs", "page 1 of 3")
        assert len(page["rows"]) == 101 and page["rows"][0][:3] == ["run", "state", "step"]
        assert {"batch", "lr"} <= set(page["rows"][0]), "the options that differ get columns"
        _shot(driver, "first_page")

        type_into(driver, "filter (name or lr>0.01)", "run-01", pane)
        page = shown("100 match the filter")
        assert len(names(page)) == 100 and all(n.startswith("run-01") for n in names(page))
        choose(driver, "state", "failed", pane)
        page = shown("25 match the filter")
        assert {row[1] for row in page["rows"][1:]} == {"failed"}
        choose(driver, "sort by", "run", pane)
        choose(driver, "order", "ascending", pane)
        page = wait.until(lambda d: (t := shown("25 match")) and names(t)[0] == "run-0101" and t)
        assert names(page) == sorted(names(page)) and len(names(page)) == 25
        _shot(driver, "filtered")

        # An expression over the config (issue 48), then a sort by a config column.
        choose(driver, "state", "any state", pane)
        type_into(driver, "filter (name or lr>0.01)", "lr<0.05 and batch==32", pane)
        kept = sum(1 for i in range(RUNS) if i % 3 and i % 2)  # lr 0.01 or 0.001, batch 32
        page = shown(f"{kept} match the filter")
        lr, batch = page["rows"][0].index("lr"), page["rows"][0].index("batch")
        assert {(row[lr], row[batch]) for row in page["rows"][1:]} == {
            ("0.01", "32"), ("0.001", "32"),
        }  # fmt: skip
        choose(driver, "sort by", "config.lr", pane)  # ascending, as chosen above
        page = wait.until(lambda d: (t := shown(f"{kept} match")) and t["rows"][1][lr] == "0.001")
        lrs = [float(row[lr]) for row in shown(f"{kept} match")["rows"][1:]]
        assert lrs == sorted(lrs) and lrs[-1] == 0.01
        _shot(driver, "expression")
        type_into(driver, "filter (name or lr>0.01)", "lr<0.05 and <b>x", pane)
        page = shown("expected a key at '<' (character 13)", "accepted: KEY OP VALUE")
        assert "filter 'lr<0.05 and <b>x'" in page["text"], "the text shown as typed, no markup"
        choose(driver, "sort by", "run", pane)

        type_into(driver, "filter (name or lr>0.01)", "", pane)
        choose(driver, "state", "any state", pane)
        page = shown(f"{RUNS} runs", "page 1 of 3")
        type_into(driver, "page", "2", pane)
        page = shown("page 2 of 3")
        assert names(page) == [f"run-{i:04d}" for i in range(100, 200)]
        _shot(driver, "page_2")

        # The baseline chosen on the page, as --baseline: each value told against it.
        type_into(driver, "baseline (a run)", "run-0120", pane)
        page = shown("run-0120 (baseline)", "(last +/- run-0120)")
        _shot(driver, "baseline")
        type_into(driver, "baseline (a run)", "", pane)
        shown("page 2 of 3")
        wait.until(lambda d: "(baseline)" not in d.execute_script(ROWS_JS, table)["text"])

        driver.find_element(By.LINK_TEXT, "run-0150").click()
        wait.until(lambda d: d.current_url.endswith(f"/env/{run_name}_run-0150"))
        plot = wait.until(lambda d: (p := plot_of(d, "train losses")) and p["drawn"] and p)
        assert plot["points"][0] == 20 and plot["x_last"][0] == 19
        _shot(driver, "run_page")

        # A run hidden from its row's checkbox leaves the comparison (issue 48), W&B's eye.
        driver.get(f"{visdom_server.url}/env/{INDEX_ENV}")
        type_into(driver, "page", "1", pane)
        choose(driver, "sort by", "last update", pane)
        choose(driver, "order", "descending", pane)  # the 20 compared: the last updated
        page = wait.until(
            lambda d: (t := shown("page 1 of 3")) and names(t)[0][0] == COMPARED and t
        )
        hidden = names(page)[0].split()[-1]
        tick(driver, hidden, pane)  # its box, under the runs pane's controls
        shown(f"{hidden} (hidden)")
        _shot(driver, "hidden")
        driver.get(f"{visdom_server.url}/env/{run_name}_compare")
        drawn = wait.until(
            lambda d: next((p for p in plots(d) if (p["title"] or "").endswith("(19 runs)")), None)
        )
        assert not any(hidden in str(name) for name in drawn["names"]), drawn["names"]
        wait.until(lambda d: "runs compared (19)" in d.find_element(By.TAG_NAME, "body").text)
        assert hidden not in driver.find_element(By.TAG_NAME, "body").text, "not in its table"
        _shot(driver, "hidden_compare")
