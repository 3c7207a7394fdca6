"""The project's own visdom server: starts offline, is told apart from other servers, renders plots."""

from __future__ import annotations

import http.client
import posixpath
import re
import uuid
from pathlib import Path

import numpy as np
import pytest
import visdom
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.fixtures.servers.net import free_port
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import owning_visualizer, visdom_answers
from visualizer.server.process import VisdomServer, VisdomServerError, ensure_server

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
# Bounds on waiting for the browser, not expectations about speed.
BROWSER_WAIT_S = 60
POINT_SELECTOR = ".js-plotly-plot .scatterlayer .trace path.point"


def _client(server: VisdomServer, env: str) -> visdom.Visdom:
    return visdom.Visdom(
        server=f"http://{server.endpoint.host}",
        port=server.endpoint.port,
        env=env,
        raise_exceptions=True,
        use_incoming_socket=False,
    )


def _get(server: VisdomServer, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(server.endpoint.host, server.endpoint.port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_server_answers_as_visdom(visdom_server: VisdomServer) -> None:
    assert visdom_server.running
    assert visdom_server.url == f"http://127.0.0.1:{visdom_server.endpoint.port}"
    assert visdom_answers(visdom_server.endpoint)


def test_index_page_and_every_asset_it_references_are_served(visdom_server: VisdomServer) -> None:
    status, page = _get(visdom_server, "/")
    assert status == 200, page[:500]
    refs = re.findall(rb'(?:src|href)=["\']?(/(?:static|user)/[^"\'\s>]+)', page)
    assert len(refs) > 15, page[:2000]
    broken = []
    for ref in refs:
        # Browsers resolve "/static/../user/style.css" before asking; do the same.
        path = posixpath.normpath(ref.decode())
        code, body = _get(visdom_server, path)
        if code != 200 or not body:
            broken.append((path, code))
    # user/style.css is legitimately empty unless a user style exists.
    assert [b for b in broken if not b[0].startswith("/user/")] == []


@pytest.mark.integration
def test_start_on_a_port_held_by_another_server_fails_clearly(
    plain_http: VisdomEndpoint, tmp_path: Path
) -> None:
    server = VisdomServer(plain_http, env_path=tmp_path / "envs", log_path=tmp_path / "visdom.log")
    with pytest.raises(VisdomServerError, match=rf"port {plain_http.port} .* not visdom"):
        server.start()
    assert not server.running


def test_non_loopback_bind_without_credentials_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("VISDOM_USERNAME", raising=False)
    monkeypatch.delenv("VISDOM_PASSWORD", raising=False)
    endpoint = VisdomEndpoint.parse(
        "0.0.0.0", free_port()
    )  # the login would come from the environment
    server = VisdomServer(endpoint, env_path=tmp_path / "envs")
    with pytest.raises(VisdomServerError, match="VISDOM_USERNAME and VISDOM_PASSWORD"):
        server.start()
    assert not server.running


@pytest.mark.integration
def test_failed_start_reports_the_server_log(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "envs"
    not_a_dir.write_text("visdom needs a directory here")
    server = VisdomServer(
        VisdomEndpoint(port=free_port()), env_path=not_a_dir, log_path=tmp_path / "visdom.log"
    )
    with pytest.raises(VisdomServerError, match=r"(?s)exited with status .*NotADirectoryError"):
        server.start(timeout=60)
    assert not server.running


@pytest.mark.integration
def test_stop_ends_the_server_and_is_idempotent(tmp_path: Path) -> None:
    endpoint = VisdomEndpoint(port=free_port())
    with VisdomServer(
        endpoint, env_path=tmp_path / "envs", log_path=tmp_path / "visdom.log"
    ) as server:
        assert visdom_answers(endpoint)
    assert not server.running
    assert not visdom_answers(endpoint)
    server.stop()


def test_its_log_is_one_file_per_port_in_the_users_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a new /tmp folder at every start: a bounded place a person finds after a crash."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    endpoint = VisdomEndpoint(port=free_port())
    for _ in range(2):
        with VisdomServer(endpoint, env_path=tmp_path / "envs") as server:
            assert visdom_answers(endpoint)
    log = tmp_path / "state" / "remote-train-monitor" / "visdom" / f"visdom-{endpoint.port}.log"
    assert server.log_path == log and log.stat().st_size > 0
    assert [p.name for p in log.parent.iterdir()] == [log.name]


def test_ensure_server_reuses_a_running_visdom(visdom_server: VisdomServer) -> None:
    assert ensure_server(visdom_server.endpoint) is None
    assert ensure_server(visdom_server.endpoint, start=False) is None


def test_a_visdom_no_visualizer_started_names_no_owner(visdom_server: VisdomServer) -> None:
    """Shared on purpose (``python -m visualizer.server``): others may use it (test_one_port.py)."""
    assert owning_visualizer(visdom_server.endpoint) is None


def test_ensure_server_without_start_says_how_to_start_one() -> None:
    port = free_port()
    with pytest.raises(
        VisdomServerError, match=rf"python -m visualizer.server --host 127.0.0.1 --port {port}"
    ):
        ensure_server(VisdomEndpoint(port=port), start=False)


def test_line_plot_renders_in_headless_chromium(
    visdom_server: VisdomServer, chromium_driver
) -> None:
    n_points = 17
    env = f"test_{uuid.uuid4().hex[:8]}"
    xs = np.arange(n_points, dtype=float)
    vis = _client(visdom_server, env)
    win = vis.line(X=xs, Y=xs**2, opts={"markers": True, "title": "rendered by chromium"})
    assert vis.win_exists(win, env=env)

    driver = chromium_driver
    driver.get(f"{visdom_server.url}/env/{env}")
    wait = WebDriverWait(driver, BROWSER_WAIT_S)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, POINT_SELECTOR)) >= n_points)

    assert len(driver.find_elements(By.CSS_SELECTOR, POINT_SELECTOR)) == n_points
    traces = driver.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot'))"
        ".map(div => div.data.map(t => ({x: Array.from(t.x), y: Array.from(t.y), mode: t.mode})));"
    )
    assert len(traces) == 1 and len(traces[0]) == 1, traces
    trace = traces[0][0]
    assert trace["x"] == xs.tolist()
    assert trace["y"] == (xs**2).tolist()
    assert "markers" in trace["mode"]

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / "visdom_plot.png"))

    # Everything the page loaded came from our server: it works with no internet.
    origins = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => new URL(e.name).origin);"
    )
    assert set(origins) <= {visdom_server.url}, origins
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
