"""Headless Chromium on a sweep of :data:`RUNS` runs (issue 48: every row checked at 10,000 runs,
what is drawn): the runs table counts them all, filters by an expression over the config, sorts
by a config column, and the comparison draws 100 runs chosen on its page, each window titled
with the count. One sweep of few points (``workloads.many_runs``), one follower, for the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.test_runs_table_page import ROWS_JS
from tests.fixtures.servers.pages import BROWSER_WAIT_S, choose, plots, screenshot, type_into
from tests.fixtures.servers.visdom_reading import following
from visualizer.panes.runs_table import INDEX_ENV
from workloads.many_runs import LRS, run_name, run_spec, write_runs

RUNS = 10_000
POINTS = 5  # a point a run's series costs the writer little: the runs' number is the test
COMPARED = 100
FILTER = "lr>0.001 and seed<50"  # a run's seed is its index
FILTER_FIELD = "filter (name or lr>0.01)"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, visdom_server: Any) -> Iterator[Path]:
    """:data:`RUNS` finished runs followed into the session's visdom until the module ends."""
    root = tmp_path_factory.mktemp("ten-thousand")
    write_runs(root, RUNS, points=POINTS)
    with following(root, visdom_server.endpoint, env=root.name):
        yield root


def _table(driver: Any, root: Path, *needles: str) -> dict:
    """The runs table's rows once its text holds every one of ``needles`` (and all is read)."""
    title = f"runs: {root}"

    def shown(d: Any) -> Any:
        page = d.execute_script(ROWS_JS, title)
        text = page["text"] if page else ""
        return page if all(n in text for n in needles) and "reading" not in text else None

    try:
        return WebDriverWait(driver, BROWSER_WAIT_S, poll_frequency=0.3).until(shown)
    except TimeoutException:
        page = driver.execute_script(ROWS_JS, title)
        raise AssertionError(f"{needles} not in {page and page['text'][:600]!r}") from None


def _table_checks(sweep: Path, visdom_server: Any, driver: Any) -> None:
    """The table counts every run, filters by the config, and sorts by a config column."""
    pane = f"filter, sort, page ({sweep.name})"
    driver.get(f"{visdom_server.url}/env/{INDEX_ENV}")
    page = _table(driver, sweep, f"{RUNS:,} runs: rows 1-100 (page 1 of {RUNS // 100})")
    assert len(page["rows"]) == 101, "a page of 100 rows under the header"
    screenshot(driver, "ten_thousand_table")

    kept = [i for i in range(50) if run_spec(i).options["lr"] > 0.001]
    type_into(driver, FILTER_FIELD, FILTER, pane)
    page = _table(driver, sweep, f"{len(kept)} match the filter")
    head = page["rows"][0]
    lr, seed = head.index("lr"), head.index("seed")
    assert sorted(row[0].split()[-1] for row in page["rows"][1:]) == [run_name(i) for i in kept]
    assert all(float(row[lr]) > 0.001 and int(row[seed]) < 50 for row in page["rows"][1:])

    choose(driver, "sort by", "config.lr", pane)
    choose(driver, "order", "ascending", pane)
    low = min(lr_ for lr_ in LRS if lr_ > 0.001)

    def by_lr(d: Any) -> Any:
        rows = _table(d, sweep, f"{len(kept)} match")["rows"][1:]
        seen.append([(r[0], r[lr]) for r in rows])
        lrs = [float(row[lr]) for row in rows]
        return lrs if lrs == sorted(lrs) and lrs[0] < lrs[-1] else None

    seen: list = []
    try:
        lrs = WebDriverWait(driver, BROWSER_WAIT_S).until(by_lr)
    except TimeoutException:
        raise AssertionError(seen[-1]) from None
    assert lrs[0] == low and len(lrs) == len(kept)
    screenshot(driver, "ten_thousand_filtered_sorted")
    type_into(driver, FILTER_FIELD, "", pane)  # as it was, for the module's other checks
    choose(driver, "sort by", "last update", pane)
    _table(driver, sweep, f"{RUNS:,} runs: rows 1-100")


def _compare_checks(sweep: Path, visdom_server: Any, driver: Any) -> None:
    """A hundred runs compared, chosen on the comparison's page, are drawn and counted in every
    window's title, the parallel coordinates' too."""
    driver.get(f"{visdom_server.url}/env/{sweep.name}_compare")
    wait = WebDriverWait(driver, BROWSER_WAIT_S, poll_frequency=0.5)
    wait.until(lambda d: any((p["title"] or "").endswith("(20 runs)") for p in plots(d)))
    type_into(driver, "runs compared", str(COMPARED), "compare")

    def hundred(d: Any) -> Any:
        """The line plots once each counts and draws 100 runs (their groups' curves)."""
        shown = [p for p in plots(d) if not (p["title"] or "").startswith("config and")]
        if not shown or not all(f"({COMPARED} runs" in (p["title"] or "") for p in shown):
            return None
        # A curve a run (past 20, raw); a run stopped after one point draws a dot, no line.
        return shown if all(p["drawn"] >= COMPARED * 0.9 for p in shown) else None

    try:
        drawn = wait.until(hundred)
    except TimeoutException:
        screenshot(driver, "ten_thousand_compare_100")
        raise AssertionError([(p["title"], p["drawn"]) for p in plots(driver)]) from None
    loss = next(p for p in drawn if p["title"].startswith("train losses: loss"))
    assert len(loss["names"]) >= COMPARED * 0.9, loss["names"]  # a curve a run, past 20
    # The parallel coordinates, drawn after the line plots: a line a run, the title counting them.
    wait.until(
        lambda d: any(
            (p["title"] or "").startswith("config and") and f"({COMPARED} runs)" in p["title"]
            for p in plots(d)
        )
    )
    screenshot(driver, "ten_thousand_compare_100")
    type_into(driver, "runs compared", "20", "compare")


def test_ten_thousand_runs_in_the_table_filtered_sorted_and_a_hundred_compared(
    sweep, visdom_server, chromium_driver
):
    # One test of the sweep's checks: under xdist (3.8, pytest 9) a module's tests can run on
    # both workers, each writing the sweep again (29 s each).
    _table_checks(sweep, visdom_server, chromium_driver)
    _compare_checks(sweep, visdom_server, chromium_driver)
