"""What a person sees of many runs in headless Chromium: the runs table's first page with
every run counted, and a comparison page with every compared run drawn. Plotly's and
the page's own state are read, as :mod:`tests.fixtures.servers.pages` does in the tests.
"""

from __future__ import annotations

import json
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

# Set before the comparison page's own scripts run: ``rtmDrawn()`` says whether its line
# plots (``windows`` of them, each with ``runs`` raw traces and a line drawn for each;
# smoothed copies left out) are drawn, and whether every plot pane is (the parallel
# coordinates too: their axes; known by their window's title before they are drawn, as the
# page draws them last). The first frame that shows the line plots drawn is kept
# (``rtmLinesAt``, ms from asking for the page), read in the page as it paints: a poll from
# outside waits on the page's one thread, which the parallel coordinates then hold for
# seconds, so it missed the line plots' time whenever they began within a poll of them.
WATCH_JS = """
(function (runs, windows, parcoordsTitle) {
  window.rtmLinesAt = null;
  window.rtmDrawn = function () {
    let lines = 0, linesDrawn = 0, parcoords = 0, parcoordsDrawn = 0;
    for (const div of document.querySelectorAll('.plotly-graph-div')) {
      const data = div.data || [];
      const bar = div.closest('.react-grid-item')?.querySelector('.bar');
      if (data.some(t => t.type === 'parcoords') || (bar && bar.textContent.includes(parcoordsTitle))) {
        parcoords++; parcoordsDrawn += div.querySelectorAll('.y-axis').length > 0 ? 1 : 0;
        continue;
      }
      lines++;
      const traces = data.filter(t => t.meta !== 'smoothed' && t.x && t.x.length).length;
      const drawn = div.querySelectorAll('.scatterlayer .trace path.js-line').length;
      linesDrawn += traces >= runs && drawn >= runs ? 1 : 0;
    }
    const linesDone = lines >= windows && linesDrawn === lines;
    return [linesDone, linesDone && parcoordsDrawn === parcoords];
  };
  (function frame() {
    if (window.rtmDrawn()[0]) window.rtmLinesAt = performance.now();
    else requestAnimationFrame(frame);
  })();
})(%s, %s, %s);
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


def link_to(driver: Any, label: str) -> str | None:
    """Where the open page's link reading ``label`` goes (the runs table's "compared" link:
    following it is the navigation a click makes); None where there is none."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('a'))"
        ".find(a => a.textContent === arguments[0])?.href || null;",
        label,
    )


def comparison_drawn(
    driver: Any, url: str, runs: int, windows: int, cap: float
) -> dict[str, float | None]:
    """Seconds from asking for the comparison page at ``url`` until it is loaded (``load_s``:
    visdom's page and scripts), until the frame that shows its ``windows`` line plots drawn
    (``lines_s``: each with ``runs`` runs, a trace and a line each), and until every plot
    pane is drawn and the page answers (``page_s``: its parallel coordinates too); None
    past ``cap``."""
    title = PARCOORDS_TITLE.split(" (")[0].format(tag="")
    source = WATCH_JS % (runs, windows, json.dumps(title))
    hook = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": source})
    try:
        began = time.perf_counter()
        driver.get(url)
        loaded = time.perf_counter() - began  # visdom's page and scripts, before any pane
        drawn = until_page(driver, lambda d: d.execute_script("return rtmDrawn()[1]"), cap)
        lines_at = driver.execute_script("return window.rtmLinesAt")
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", hook)
    page_s = None if drawn is None else loaded + drawn
    lines_s = None if lines_at is None or page_s is None else lines_at / 1000
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
