"""Zoom to full resolution in Chromium: a 1,000,000-point run zoomed to a 1,000-step range.

    python -m bench zoom

The visualizer's own command line follows the run into the project's visdom
server; headless Chromium opens the printed page and zooms the loss plot the
way a drag does (``Plotly.relayout`` on the plot, which emits the page's
relayout event). Timed in the page: from the relayout to the plot's trace
holding every stored point of the range (1,000 points, at the stored spacing).
Between zooms the plot is zoomed out again (a double-click), so each zoom starts
from the overview, at a new place in the run. The reference, alternating with
ours: visdom redrawing a window of the same size (two traces of 1,000 points,
a raw and a smoothed curve) posted straight to it, timed from the post to the
page showing it.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import unquote

from bench.bench_viewer import _printed_url, _stop, _until, _visualizer, _write_store
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.visdom import start_chromium
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.visdom_client import VisdomClient

log = logging.getLogger(__name__)

POINTS = 1_000_000  # one series, a point a step
RANGE = 1_000  # stored points in the zoomed range
ROUNDS = 5
TITLE = "train losses"
SCRIPT_TIMEOUT_S = 60  # a bound on waiting for the page, not a target

# Calls ``act`` (a zoom, or nothing), then polls the plot ``title`` until its first
# trace runs from ``first`` to ``last``; answers the milliseconds since ``started``
# (the page's clock; null: take it from the call) and the trace's x values.
WAIT_JS = """
const [title, update, first, last, started, done] = arguments;
const find = () => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find(d => d.layout && (d.layout.title.text || d.layout.title) === title);
const begin = started === null ? Date.now() : started;
if (update !== null) Plotly.relayout(find(), update);
const timer = setInterval(() => {
  const div = find(), x = div && div.data && div.data.length && div.data[0].x;
  if (x && x[0] === first && x[x.length - 1] === last) {
    clearInterval(timer);
    done([Date.now() - begin, x]);
  }
}, 5);
"""


def _zoom(driver: Any, title: str, start: int) -> float:
    """Seconds from a zoom to ``start``..``start + RANGE - 1`` to every point of it drawn."""
    last = start + RANGE - 1
    ms, x = driver.execute_async_script(
        WAIT_JS, title, {"xaxis.range": [start, last]}, start, last, None
    )
    if x != list(range(start, last + 1)):
        raise RuntimeError(f"benchmark: the zoom drew {len(x)} points, not every stored one")
    return ms / 1000.0


def _zoom_out(driver: Any, title: str) -> None:
    driver.execute_async_script(
        WAIT_JS, title, {"xaxis.autorange": True, "yaxis.autorange": True}, 0, POINTS - 1, None
    )


def _reference(driver: Any, client: VisdomClient, env: str, start: int) -> float:
    """Seconds from posting visdom a window of two RANGE-point traces to the page showing it."""
    x = list(range(start, start + RANGE))
    traces = [
        {"x": x, "y": [float(i % 97) for i in x], "type": "scatter", "mode": "lines", "name": name}
        for name in ("raw", "smoothed")
    ]
    message = {
        "data": traces,
        "win": "zoom_reference",
        "eid": env,
        "layout": {"title": {"text": "reference"}, "xaxis": {"type": "linear"}},
        "opts": {"title": "reference", "width": 600, "height": 400},
    }
    posted = time.time() * 1000.0
    client.post("events", message)
    ms, _ = driver.execute_async_script(WAIT_JS, "reference", None, start, x[-1], posted)
    return ms / 1000.0


def _measure(root: Path, endpoint: VisdomEndpoint) -> dict:
    store = root / "zoom-1m" / "pickle"
    _write_store(store, POINTS, 1)
    proc = _visualizer(store, endpoint.port, root / "zoom.log")
    (root / "page").mkdir()
    driver = start_chromium(root / "page")
    driver.set_script_timeout(SCRIPT_TIMEOUT_S)
    try:
        url = _printed_url(proc)
        driver.get(url)
        _until(lambda: driver.execute_script(
            "return Array.from(document.querySelectorAll('.js-plotly-plot')).length") > 0, "the page")  # fmt: skip
        _zoom_out(driver, TITLE)  # the overview drawn
        client, env = VisdomClient(endpoint), unquote(url.rsplit("/env/", 1)[1])
        ours, reference = [], []
        for i in range(ROUNDS):  # alternating, each zoom at a new place in the run
            ours.append(_zoom(driver, TITLE, 100_000 + i * 150_000))
            _zoom_out(driver, TITLE)
            reference.append(_reference(driver, client, env, 100_000 + i * 150_000))
        return {"ours": ours, "reference": reference}
    finally:
        driver.quit()
        _stop(proc)


def run() -> list[dict]:
    """One row: a zoom into a 1,000,000-point run drawn at full resolution in Chromium."""
    from visualizer.server.process import VisdomServer

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        endpoint = VisdomEndpoint(port=free_port())
        with VisdomServer(endpoint, env_path=root / "envs", log_path=root / "visdom.log"):
            times = _measure(root, endpoint)
    ours, reference = median(times["ours"]), median(times["reference"])
    return [
        {
            "benchmark": f"zoom a {POINTS:,}-point run to a {RANGE:,}-step range: relayout in "
            f"Chromium -> every stored point of it drawn (median of {ROUNDS}, slowest)",
            "ours": f"{ours:.2f} s, {max(times['ours']):.2f} s",
            "reference": f"visdom redrawing a same-size window {reference:.2f} s, "
            f"{max(times['reference']):.2f} s",
            "ratio": f"{ours / max(reference, 1e-9):.1f}x visdom's redraw",
            "target": "<= 1 s",
            "met": ours <= 1.0,
        }
    ]


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
