"""Our side of visdom's page (its mended script, a window's hash), against a real server and Chromium."""

from __future__ import annotations

import hashlib
import http.client
from typing import Any

from tests.fixtures.servers.waiting import wait_until
from visualizer.server import page as visdom_page
from visualizer.server.process import VisdomServer
from visualizer.visdom_client import VisdomClient


def test_a_window_is_hashed_as_javascript_writes_its_numbers() -> None:
    # What JSON.stringify writes (node): exponents from 1e-7 down and from 1e21 up.
    window = {"y": [1e-5, 1.5e-5, 1e-6, 9.99e-7, -2.5e-7, 1e-8, 1e21, 0.1 + 0.2, 2.0, 2**53 + 1]}
    page = '{"y":[0.00001,0.000015,0.000001,9.99e-7,-2.5e-7,1e-8,1e+21,0.30000000000000004,2,9007199254740992]}'
    assert visdom_page.page_hash(window) == hashlib.md5(page.encode()).hexdigest()
    text = {"t": "lr 1e-05 · µ"}  # as written, inside a string; UTF-8, not escaped
    page_text = '{"t":"lr 1e-05 · µ"}'
    assert visdom_page.page_hash(text) == hashlib.md5(page_text.encode()).hexdigest()


# Counts the page's requests for a whole env (visdom's way out of a window it got wrong).
_COUNT_ENV_FETCHES = """
window.envFetches = 0;
const open = XMLHttpRequest.prototype.open;
XMLHttpRequest.prototype.open = function(method, url) {
  if (String(url).includes('env/')) window.envFetches++;
  return open.apply(this, arguments);
};
"""


def test_an_open_page_applies_updates_of_small_values_without_fetching_the_env_again(
    visdom_server: VisdomServer, run_name: str, chromium_driver: Any
) -> None:
    # A learning rate: Python's JSON writes 1e-05 where the page writes 0.00001, so
    # visdom's own hash of the window never matched the page's.
    client = VisdomClient(visdom_server.endpoint)
    line = {"x": [0], "y": [1e-5], "type": "scatter", "mode": "lines", "name": "lr ·µ"}
    client.post("events", {"data": [line], "win": "lr", "eid": run_name, "opts": {}, "layout": {}})
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}")
    wait_until(lambda: chromium_driver.execute_script(_PLOT_POINTS) == 1, timeout=30)
    chromium_driver.execute_script(_COUNT_ENV_FETCHES)
    for step in range(1, 21):
        update = {"x": [step], "y": [1e-5 / (1 + step)], "name": "lr ·µ"}
        client.post(
            "update",
            {"data": [update], "win": "lr", "eid": run_name, "append": True, "name": None},
        )
    wait_until(lambda: chromium_driver.execute_script(_PLOT_POINTS) == 21, timeout=30)
    assert chromium_driver.execute_script("return window.envFetches") == 0


def test_an_open_page_keeps_up_with_redraws_and_appends_in_quick_succession(
    visdom_server: VisdomServer, run_name: str, chromium_driver: Any
) -> None:
    # What the visualizer sends a window during a run: a redraw, then appends, well
    # within visdom's 100 ms batch of window messages.
    client = VisdomClient(visdom_server.endpoint)

    def redraw(points: int) -> None:
        line = {"x": list(range(points)), "y": [0.5] * points, "type": "scatter", "name": "loss"}
        msg = {"data": [line], "win": "w", "eid": run_name, "opts": {}, "layout": {}}
        client.post("events", msg)

    redraw(1)
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}")
    wait_until(lambda: chromium_driver.execute_script(_PLOT_POINTS) == 1, timeout=30)
    chromium_driver.execute_script(_COUNT_ENV_FETCHES)
    points = 1
    for _round in range(10):
        points += 10
        redraw(points)
        for _append in range(3):
            update = {"data": [{"x": [points], "y": [0.25], "name": "loss"}], "append": True}
            client.post("update", {**update, "win": "w", "eid": run_name, "name": None})
            points += 1
    wait_until(lambda: chromium_driver.execute_script(_PLOT_POINTS) == points, timeout=30)
    assert chromium_driver.execute_script("return window.envFetches") == 0


def test_an_opened_page_asks_for_its_env_once(
    visdom_server: VisdomServer, run_name: str, chromium_driver: Any
) -> None:
    """visdom's page asked twice as it opened, and every window came twice (3.8 MB more to
    parse for a comparison of 100 runs)."""
    client = VisdomClient(visdom_server.endpoint)
    line = {"x": [0, 1], "y": [0.5, 0.25], "type": "scatter", "mode": "lines", "name": "loss"}
    client.post("events", {"data": [line], "win": "w", "eid": run_name, "opts": {}, "layout": {}})
    hook = chromium_driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument", {"source": _COUNT_ENV_FETCHES}
    )
    try:
        chromium_driver.get(f"{visdom_server.url}/env/{run_name}")
        wait_until(lambda: chromium_driver.execute_script(_PLOT_POINTS) == 2, timeout=30)
        # Time for a second ask to show: two more trips to the server and back.
        client.post(
            "events", {"data": [line], "win": "v", "eid": run_name, "opts": {}, "layout": {}}
        )
        count = "return document.querySelectorAll('.js-plotly-plot').length"
        wait_until(lambda: chromium_driver.execute_script(count) == 2, timeout=30)
        assert chromium_driver.execute_script("return window.envFetches") == 1
    finally:
        chromium_driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", hook)


_PLOT_POINTS = (
    "const d = document.querySelector('.js-plotly-plot'); return d && d.data[0].x.length;"
)


def test_the_page_script_is_served_with_every_mend(visdom_server: VisdomServer) -> None:
    """Each mend finds its place in visdom's page script (a visdom upgrade would move them)."""
    own = f"{visdom_server.endpoint.host}:{visdom_server.endpoint.port}"
    conn = http.client.HTTPConnection(visdom_server.endpoint.host, visdom_server.endpoint.port)
    conn.request("GET", "/static/js/main.js", headers={"Host": own})
    response = conn.getresponse()
    status, script = response.status, response.read()
    assert status == 200
    for old, new in visdom_page._SCRIPT_MENDS:
        assert new in script and old not in script.replace(new, b""), old[:60]
    # The plot pane reports its x range (visualizer.model.zoom) without its data.
    assert b'event_type:"' + visdom_page.ZOOM_EVENT.encode() + b'"' in script
    assert b"pane_data:!1" in script
