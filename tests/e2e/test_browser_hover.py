"""Headless Chromium on the comparison page (issue 48): hovering a run's curve, or its row in the
runs' table, highlights that run in every plot of the page and in the table."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.test_browser_page import log_run
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, plot_of
from visualizer.follower import Follower
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.visdom_client import VisdomClient

RUNS = (("lr-0.1", 0.1, 16), ("lr-0.01", 0.01, 32), ("lr-0.05", 0.05, 16))
TRAIN, VAL = "train losses: loss (3 runs)", "validation: loss (3 runs)"

# Where on the page the trace named arguments[1] of the plot titled arguments[0] draws its
# middle point, for the pointer to go there.
POINT_JS = """
const g = Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find(d => d.layout && (d.layout.title.text || d.layout.title) === arguments[0]);
const t = g.data.find(t => t.name === arguments[1]), k = Math.floor(t.x.length / 2);
const f = g._fullLayout, box = g.getBoundingClientRect();
return [box.left + f._size.l + f.xaxis.c2p(t.x[k]), box.top + f._size.t + f.yaxis.c2p(t.y[k])];
"""

# Per plot titled: each scatter trace's name and its drawn opacity; the tables' marked rows.
HIGHLIGHT_JS = """
const plots = {};
document.querySelectorAll('.js-plotly-plot').forEach(g => {
  if (!g.layout || !g.data) return;
  const groups = g.querySelectorAll('.scatterlayer .trace');
  plots[g.layout.title.text || g.layout.title] = g.data.filter(t => t.type === 'scatter')
    .map((t, i) => [t.name, groups[i] ? groups[i].style.opacity : null]);
});
const rows = Array.from(document.querySelectorAll('tr')).filter(r => r.style.background)
  .map(r => r.cells[0].textContent.trim());
return {plots, rows};
"""


def _highlighted(driver: Any, name: str) -> dict | None:
    """The page's highlight once run ``name`` alone is highlighted in the train and val plots."""
    seen = driver.execute_script(HIGHLIGHT_JS)
    for title in (TRAIN, VAL):
        traces = seen["plots"].get(title) or []
        if not traces or any((o == "0.15") == (n == name) for n, o in traces):
            return None
    return seen


def _move(driver: Any, *points: tuple[int, int]) -> None:
    """The pointer moved through ``points``, in page coordinates (one action chain each call)."""
    pointer = ActionBuilder(driver)
    for x, y in points:
        pointer.pointer_action.move_to_location(x, y)
    pointer.perform()


def _compare_page(tmp_path: Any, run_name: str, server: Any, driver: Any) -> tuple[Any, Any]:
    """The comparison page of the RUNS sweep, followed once, opened in ``driver``."""
    runs = tmp_path / run_name
    for name, lr, batch in RUNS:
        log_run(runs / name / "pickle", lr, batch, images=0)
    Follower(str(runs), VisdomClient(server.endpoint)).run_once()
    driver.get(f"{server.url}/env/{run_name}_compare")
    return driver, WebDriverWait(driver, BROWSER_WAIT_S)


def test_hovering_a_curve_or_a_row_highlights_that_run_in_every_plot_and_the_table(
    tmp_path, visdom_server, chromium_driver, run_name
):
    driver, wait = _compare_page(tmp_path, run_name, visdom_server, chromium_driver)
    for title in (TRAIN, VAL):
        wait.until(lambda d, t=title: (p := plot_of(d, t)) and p["drawn"] and p)

    def hovered(d: Any) -> Any:
        # The pointer over lr-0.01's train curve, where it is now: the page may lay its panes
        # out again as windows arrive (a pane drawn at a new size), moving the curve. It comes
        # from off the plots each time: Plotly tells a hover only when the point hovered
        # changes, and the page hooks each plot's events within half a second of its drawing.
        x, y = d.execute_script(POINT_JS, TRAIN, "lr-0.01")
        _move(d, (2, 2), (int(x), int(y)))
        return _highlighted(d, "lr-0.01")

    seen = wait.until(hovered)
    assert {tuple(t) for t in seen["plots"][VAL]} >= {("lr-0.1", "0.15"), ("lr-0.01", "1")}
    assert seen["rows"] == ["lr-0.01"], "its row in the runs' table"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "hover_curve.png"))
    _move(driver, (2, 2))  # off the plots: nothing stands out
    wait.until(lambda d: not d.execute_script(HIGHLIGHT_JS)["rows"])

    # The pointer over a run's row in the table: its curves stand out in every plot.
    link = driver.find_element(By.XPATH, "//table[.//th[text()='lr']]//a[text()='lr-0.05']")
    ActionChains(driver).move_to_element(link).perform()
    seen = wait.until(lambda d: _highlighted(d, "lr-0.05"))
    assert seen["rows"] == ["lr-0.05"]
    assert driver.save_screenshot(str(ARTIFACTS / "hover_row.png"))
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


# The parallel coordinates' lines as Plotly draws them: per run (the trace's customdata), its
# line's color on the trace's colorscale.
PARCOORDS_JS = """
const g = Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find(d => d._fullData && d._fullData[0] && d._fullData[0].type === 'parcoords');
if (!g) return null;
const t = g._fullData[0], l = t.line, scale = l.colorscale;
if (!Array.isArray(l.color)) return {};
const span = (l.cmax - l.cmin) || 1, out = {};
t.customdata.forEach((name, i) => {
  const f = (l.color[i] - l.cmin) / span;
  out[name] = scale.reduce((b, s) => Math.abs(s[0] - f) < Math.abs(b[0] - f) ? s : b)[1];
});
return out;
"""


def _lit(driver: Any, name: str) -> dict | None:
    """The parcoords' line colors once run ``name``'s alone is not the faded grey."""
    lines = driver.execute_script(PARCOORDS_JS) or {}
    grey = [n for n, c in lines.items() if c.startswith("rgba(160")]
    return lines if lines and sorted(grey) == sorted(set(lines) - {name}) else None


def _marked_rows(driver: Any) -> list[str]:
    return driver.execute_script(HIGHLIGHT_JS)["rows"]


def test_hovering_highlights_the_parcoords_line_and_the_runs_table_on_its_own_page(
    tmp_path, visdom_server, chromium_driver, run_name
):
    driver, wait = _compare_page(tmp_path, run_name, visdom_server, chromium_driver)
    compare = driver.current_window_handle
    wait.until(lambda d: (p := plot_of(d, TRAIN)) and p["drawn"] and p)
    wait.until(lambda d: d.execute_script(PARCOORDS_JS) is not None)
    before = driver.execute_script(PARCOORDS_JS)
    driver.switch_to.new_window("tab")  # the runs table, the server's main env
    driver.get(f"{visdom_server.url}/env/{INDEX_ENV}")
    index = driver.current_window_handle
    wait.until(lambda d: d.find_elements(By.XPATH, "//td[a[text()='lr-0.05']]"))

    # The pointer over a run's row of the runs table: the comparison's page, another tab,
    # marks it too: its curves stand out, its parcoords line is drawn in its color alone.
    row = driver.find_element(By.XPATH, "//td/a[text()='lr-0.05']")
    ActionChains(driver).move_to_element(row).perform()
    wait.until(lambda d: "lr-0.05" in _marked_rows(d))
    driver.switch_to.window(compare)
    seen = wait.until(lambda d: _highlighted(d, "lr-0.05"))
    assert seen["rows"] == ["lr-0.05"], "its row in the comparison's table"
    lines = wait.until(lambda d: _lit(d, "lr-0.05"))
    assert not lines["lr-0.05"].startswith("rgba(160"), lines
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "hover_parcoords.png"))

    # The pointer on the comparison's curve of another run: the runs table's page marks it.
    def hovered(d: Any) -> Any:
        x, y = d.execute_script(POINT_JS, TRAIN, "lr-0.1")
        _move(d, (2, 2), (int(x), int(y)))  # from off the plots, as in the test above
        return _lit(d, "lr-0.1")

    wait.until(hovered)
    driver.switch_to.window(index)
    wait.until(lambda d: set(_marked_rows(d)) == {"lr-0.1"})
    assert driver.save_screenshot(str(ARTIFACTS / "hover_runs_table.png"))
    driver.switch_to.window(compare)
    _move(driver, (2, 2))  # off the plots: every line as it was
    wait.until(lambda d: d.execute_script(PARCOORDS_JS) == before)
    driver.switch_to.window(index)
    wait.until(lambda d: not _marked_rows(d))
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
