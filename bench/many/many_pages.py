"""What a person sees of many runs in headless Chromium: the runs table's first page with
every run counted, and a comparison page with every compared run drawn. Plotly's and
the page's own state are read, as :mod:`tests.fixtures.servers.pages` does in the tests.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from selenium.common.exceptions import WebDriverException

from visualizer.panes.parcoords import PARCOORDS_TITLE

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
# is a parallel-coordinates plot drawn (its axes; known by its window's title before it
# is drawn: the page draws it after the line plots), else its raw traces (smoothed copies
# left out) and the line paths drawn.
DRAWN_JS = """
const [parcoordsTitle] = arguments;
return Array.from(document.querySelectorAll('.plotly-graph-div')).map(div => {
  const data = div.data || [];
  const bar = div.closest('.react-grid-item')?.querySelector('.bar');
  if (data.some(t => t.type === 'parcoords') || (bar && bar.textContent.includes(parcoordsTitle)))
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


def comparison_drawn(
    driver: Any, url: str, runs: int, windows: int, cap: float
) -> dict[str, float | None]:
    """Seconds from asking for the comparison page at ``url`` until it is loaded (``load_s``:
    visdom's page and scripts), until its ``windows`` line plots are drawn (``lines_s``: each
    with ``runs`` runs, a trace and a line each) and until every plot pane is (``page_s``:
    its parallel coordinates too; a plot pane not drawn yet counts, holding no data); None
    past ``cap``."""
    began = time.perf_counter()
    driver.get(url)

    def drawn(d: Any, panes: str) -> bool:
        plots = d.execute_script(DRAWN_JS, PARCOORDS_TITLE.split(" (")[0].format(tag=""))
        lines = [p for p in plots if "parcoords" not in p]
        wanted = lines if panes == "lines" else plots
        return len(lines) >= windows and all(
            p["parcoords"] if "parcoords" in p else p["traces"] >= runs and p["drawn"] >= runs
            for p in wanted
        )

    loaded = time.perf_counter() - began  # visdom's page and scripts, before any pane
    lines = until_page(driver, lambda d: drawn(d, "lines"), cap)
    lines_s = None if lines is None else loaded + lines
    left = cap - (time.perf_counter() - began)
    rest = until_page(driver, lambda d: drawn(d, "all"), left) if lines is not None else None
    page_s = None if rest is None else time.perf_counter() - began
    return {"load_s": loaded, "lines_s": lines_s, "page_s": page_s}


# Plotly alone drawing the page's parallel coordinates again, in a div of its own on the same
# page: the reference for the pane (its WebGL drawn in software in a GPU-less Chromium).
PARCOORDS_ALONE_JS = """
const done = arguments[arguments.length - 1];
const div = Array.from(document.querySelectorAll('.plotly-graph-div'))
  .find(d => (d.data || []).some(t => t.type === 'parcoords'));
if (!div) { done(null); return; }
const copy = document.createElement('div');
copy.style.width = div.clientWidth + 'px'; copy.style.height = div.clientHeight + 'px';
document.body.appendChild(copy);
const began = performance.now();
Plotly.newPlot(copy, JSON.parse(JSON.stringify(div.data)), JSON.parse(JSON.stringify(div.layout)))
  .then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))))
  .then(() => { const took = (performance.now() - began) / 1000; Plotly.purge(copy);
                copy.remove(); done(took); });
"""


def parcoords_alone(driver: Any, cap: float) -> float | None:
    """Seconds Plotly takes to draw the open page's parallel coordinates in a div of its own
    (until drawn and two frames shown); None where the page has none."""
    driver.set_script_timeout(cap)
    took = driver.execute_async_script(PARCOORDS_ALONE_JS)
    return None if took is None else float(took)
