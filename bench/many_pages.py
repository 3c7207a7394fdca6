"""What a person sees of many runs in headless Chromium: the runs table's first page with
every run counted, and a comparison page with every compared run drawn. Plotly's and
the page's own state are read, as :mod:`tests.fixtures.pages` does in the tests.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from selenium.common.exceptions import WebDriverException

log = logging.getLogger(__name__)

# Rows of the runs-table pane whose header counts ``want`` runs (read or being read);
# -1 while no pane says so.
TABLE_ROWS_JS = """
const [all, reading] = arguments;
for (const item of document.querySelectorAll('.react-grid-item')) {
  const text = item.innerText || '';
  if (text.includes('\\n' + all) || text.includes(reading)) return item.querySelectorAll('tr').length;
}
return -1;
"""

# Per plot pane on the page, drawn or not yet (visdom's div of every plot pane): whether it
# is a parallel-coordinates plot drawn (its axes), else its raw traces (smoothed copies left
# out) and the line paths drawn.
DRAWN_JS = """
return Array.from(document.querySelectorAll('.plotly-graph-div')).map(div => {
  const data = div.data || [];
  if (data.some(t => t.type === 'parcoords'))
    return {parcoords: div.querySelectorAll('.y-axis').length > 0};
  return {
    traces: data.filter(t => t.meta !== 'smoothed' && t.x && t.x.length).length,
    drawn: div.querySelectorAll('.scatterlayer .trace path.js-line').length,
  };
});
"""

PAGE_ROWS = 100  # the runs table's rows a page


def until_page(driver: Any, done: Any, cap: float) -> float | None:
    """Seconds until ``done(driver)`` holds, polled every 50 ms; None past ``cap``."""
    began, error = time.perf_counter(), None
    while time.perf_counter() - began < cap:
        try:
            if done(driver):
                return time.perf_counter() - began
        except WebDriverException as err:
            error = err  # a page still loading answers scripts badly; said if it never ends
        time.sleep(0.05)
    if error is not None:
        log.warning("the page never answered: %s", error.msg)
    return None


def table_drawn(driver: Any, base: str, runs: int, cap: float) -> float | None:
    """Seconds from asking for the main env until its runs table shows its first page of rows,
    every one of ``runs`` counted ("10,000 runs: rows 1-100", or "reading N of 10,000 runs")."""
    rows = min(PAGE_ROWS, runs) + 1  # and the header row
    all_runs, reading = f"{runs:,} runs:", f"of {runs:,} runs"
    driver.get(f"{base}/env/main")
    return until_page(
        driver, lambda d: d.execute_script(TABLE_ROWS_JS, all_runs, reading) >= rows, cap
    )


def comparison_drawn(driver: Any, url: str, runs: int, cap: float) -> float | None:
    """Seconds from asking for the comparison page at ``url`` until every plot pane of it is
    drawn: each line plot with ``runs`` runs (a trace and a line each), and its parallel
    coordinates (a plot pane not drawn yet counts too: it holds no data)."""
    driver.get(url)

    def drawn(d: Any) -> bool:
        plots = d.execute_script(DRAWN_JS)
        lines = [p for p in plots if "parcoords" not in p]
        return bool(lines) and all(
            p["parcoords"] if "parcoords" in p else p["traces"] >= runs and p["drawn"] >= runs
            for p in plots
        )

    return until_page(driver, drawn, cap)
