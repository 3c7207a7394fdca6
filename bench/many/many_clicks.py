"""Clicks on the viewer's pages in headless Chromium, each timed from the click until what it
asks for is drawn (issue 48: a page event answered in <= 0.5 s at 10,000 runs): the runs
table's filter (an expression over the config), sort and page, and a run opened from its
link (the compared runs' page followed from the table's link: :mod:`.many_pages`). Each is the median of
:data:`ROUNDS`, each round changing what is shown; None when one never drew within the cap.
"""

from __future__ import annotations

import time
from typing import Any

from selenium.webdriver.common.by import By

from bench.many.many_pages import table_drawn, until_page
from tests.fixtures.servers.pages import choose, plots, type_into

ROUNDS = 3
FILTER = "filter (name or lr>0.01)"
FILTERS = ('optimizer=="adam" and lr>=0.001', "lr<0.001", 'seed>=10 and optimizer=="sgd"')
SORTS = ("config.lr", "config.optimizer", "config.seed")
PAGES = ("2", "1", "2")
# The runs table pane's text (found by its title), "" while there is none.
TABLE_TEXT_JS = """
const item = Array.from(document.querySelectorAll('.react-grid-item'))
  .find(i => (i.querySelector('.bar') || {innerText: ''}).innerText.includes(arguments[0]));
return item ? item.innerText : '';
"""
CLICKS = ("filter", "sort", "page", "open")


def _changed(driver: Any, title: str, act: Any, needle: str, cap: float) -> float | None:
    """Seconds from ``act()`` until the table titled ``title`` shows other text holding
    ``needle``."""
    before = driver.execute_script(TABLE_TEXT_JS, title)
    act()  # the click, or the Enter after the text typed

    def drawn(d: Any) -> bool:
        text = d.execute_script(TABLE_TEXT_JS, title)
        return text != before and needle in text and "reading" not in text

    return until_page(driver, drawn, cap)


def _open_run(driver: Any, name: str, cap: float) -> float | None:
    """Seconds from clicking run ``name``'s link until its page draws a line plot."""
    began = time.perf_counter()
    driver.find_element(By.LINK_TEXT, name).click()
    drawn = until_page(
        driver, lambda d: name in d.current_url and any(p["drawn"] for p in plots(d)), cap
    )
    return None if drawn is None else time.perf_counter() - began


def measure_clicks(
    driver: Any, base: str, source: str, runs: int, cap: float
) -> dict[str, list[float | None]]:
    """The seconds of each round of each click of :data:`CLICKS` on the viewer at ``base``
    following ``source`` (a sweep of more than one page of the runs table)."""
    times: dict[str, list[float | None]] = {click: [] for click in CLICKS}
    title, pane = f"runs: {source}", f"filter, sort, page ({source.rstrip('/').split('/')[-1]})"
    table_drawn(driver, base, runs, cap)
    for text in FILTERS:
        act = lambda text=text: type_into(driver, FILTER, text, pane)  # noqa: E731
        times["filter"].append(_changed(driver, title, act, "match the filter", cap))
    type_into(driver, FILTER, "", pane)
    until_page(driver, lambda d: "match" not in d.execute_script(TABLE_TEXT_JS, title), cap)
    for column in SORTS:
        act = lambda column=column: choose(driver, "sort by", column, pane)  # noqa: E731
        times["sort"].append(_changed(driver, title, act, "page 1 of", cap))
    for page in PAGES:
        act = lambda page=page: type_into(driver, "page", page, pane)  # noqa: E731
        times["page"].append(_changed(driver, title, act, f"(page {page} of", cap))
    for index in range(ROUNDS):
        shown = driver.execute_script(
            "return Array.from(document.querySelectorAll('.react-grid-item a'), a => a.text)"
            ".filter(t => t.startsWith('run-'))"
        )
        times["open"].append(_open_run(driver, shown[10 + index], cap) if shown else None)
        table_drawn(driver, base, runs, cap)
    return times


def clicks(
    driver: Any, base: str, source: str, runs: int, cap: float
) -> dict[str, list[float | None]]:
    """:func:`measure_clicks` in ``driver`` (a new Chromium), quit after."""
    try:
        return measure_clicks(driver, base, source, runs, cap)
    finally:
        driver.quit()
