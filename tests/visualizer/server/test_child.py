"""The patches our visdom child applies, against the real server the session starts."""

from __future__ import annotations

import http.client
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import websocket

from tests.fixtures.logged.images import png
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.visdom_reading import VisdomReader, page_socket
from tests.fixtures.servers.waiting import wait_until
from visualizer.model.rundata import IMAGE_HISTORY, ImageSnapshot
from visualizer.panes.images import image_message
from visualizer.panes.view import CONTROLS_WIN, ViewSettings, controls_message
from visualizer.server import child as visdom_child
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import visdom_answers
from visualizer.server.process import VisdomServer
from visualizer.visdom_client import VisdomClient, VisdomRequestError


def _snapshots(start: int, stop: int) -> list[ImageSnapshot]:
    return [ImageSnapshot("images", "p", step, png(4, 4)) for step in range(start, stop)]


def _captions(reader: VisdomReader, env: str, win: str) -> tuple[list[str], int]:
    pane = reader.windows(env)[win]
    return [item["caption"] for item in pane["content"]], pane["selected"]


def test_an_image_pane_is_drawn_with_every_snapshot_and_keeps_the_last_ones(
    visdom_server: VisdomServer, reader: VisdomReader, run_name: str
) -> None:
    client = VisdomClient(visdom_server.endpoint)
    client.post("events", image_message(run_name, *_snapshots(0, 3)))
    captions, selected = _captions(reader, run_name, "image_images_p")
    assert captions == ["p @ step 0", "p @ step 1", "p @ step 2"] and selected == 2
    for image in _snapshots(3, IMAGE_HISTORY + 10):
        client.post("update", image_message(run_name, image))
    captions, selected = _captions(reader, run_name, "image_images_p")
    assert captions == [f"p @ step {s}" for s in range(10, IMAGE_HISTORY + 10)]
    assert selected == IMAGE_HISTORY - 1, "the page's slider stays on the newest"


def test_a_pages_echo_of_our_close_does_not_delete_the_window_drawn_again(
    visdom_server: VisdomServer, reader: VisdomReader, run_name: str
) -> None:
    client = VisdomClient(visdom_server.endpoint)
    text = {"data": [{"content": "x", "type": "text"}], "eid": run_name, "opts": {}}
    client.post("events", {**text, "win": "kept"})
    client.post("events", {**text, "win": "other"})
    ws = page_socket(visdom_server)
    try:
        client.post("close", {"eid": run_name, "win": "kept"})
        client.post("events", {**text, "win": "kept"})  # drawn again at once
        # The page closes what the server closed, then sends that close back.
        ws.send(json.dumps({"cmd": "close", "data": "kept", "eid": run_name}))
        # A person closing another pane still closes it.
        ws.send(json.dumps({"cmd": "close", "data": "other", "eid": run_name}))
        deadline = time.monotonic() + 10
        while reader.has_window(run_name, "other") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        ws.close()
    assert not reader.has_window(run_name, "other")
    assert reader.has_window(run_name, "kept")


def test_a_close_of_an_env_visdom_lacks_is_no_error(visdom_server: VisdomServer) -> None:
    VisdomClient(visdom_server.endpoint).post("close", {"eid": "no-such-env", "win": "w"})


def test_no_traceback_is_served_and_a_touched_source_does_not_restart_the_server(
    visdom_server: VisdomServer,
) -> None:
    conn = http.client.HTTPConnection(visdom_server.endpoint.host, visdom_server.endpoint.port)
    conn.request("POST", "/update", body=b"not json")  # visdom's handler raises
    response = conn.getresponse()
    body = response.read()
    assert response.status == 500 and b"Traceback" not in body and b"File " not in body
    # visdom turns tornado's autoreload on: a changed imported file restarted the
    # server, and the new process exited on visdom's own argv.
    source = Path(visdom_child.__file__)
    time.sleep(1.0)  # autoreload's first look (0.5 s after start) records the file's time
    os.utime(source)
    deadline = time.monotonic() + 4  # autoreload looks every 0.5 s
    while time.monotonic() < deadline:
        assert visdom_server.running and visdom_answers(visdom_server.endpoint)
        time.sleep(0.25)


def test_websocket_handlers_read_as_fresh_to_the_polling_monitor() -> None:
    # visdom's monitor for polling clients reads last_read_time from websocket
    # handlers too: an AttributeError in the server log every 15 s.
    from visdom.server.handlers import socket_handlers

    class Handlers:
        SocketHandler = type("SocketHandler", (), {})
        VisSocketHandler = type("VisSocketHandler", (), {})

    visdom_child._websockets_never_stale(Handlers)
    assert abs(Handlers.SocketHandler().last_read_time - time.time()) < 1  # type: ignore[attr-defined]
    assert not hasattr(socket_handlers.SocketHandler, "last_read_time"), "stock visdom lacks it"


def _request(server: VisdomServer, method: str, path: str, headers: dict, body: bytes = b""):
    conn = http.client.HTTPConnection(server.endpoint.host, server.endpoint.port, timeout=10)
    conn.request(method, path, body=body or None, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def test_a_foreign_host_or_origin_is_refused_own_requests_answered(
    visdom_server: VisdomServer, reader: VisdomReader, run_name: str
) -> None:
    # DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1.
    client = VisdomClient(visdom_server.endpoint)
    client.post("events", {"data": [{"content": "x", "type": "text"}], "win": "w", "eid": run_name})
    own = f"127.0.0.1:{visdom_server.endpoint.port}"
    rebound = {"Host": f"evil.example:{visdom_server.endpoint.port}"}
    delete = json.dumps({"eid": run_name}).encode()
    assert _request(visdom_server, "POST", "/env_state", rebound)[0] == 403
    assert _request(visdom_server, "POST", "/delete_env", rebound, delete)[0] == 403
    assert _request(visdom_server, "GET", f"/env/{run_name}", rebound)[0] == 403
    foreign = {"Host": own, "Origin": "http://evil.example"}
    assert _request(visdom_server, "POST", "/delete_env", foreign, delete)[0] == 403
    assert reader.has_window(run_name, "w"), "nothing was deleted"
    try:
        websocket.create_connection(
            f"ws://{own}/socket", origin="http://evil.example", timeout=10
        ).close()
        raise AssertionError("a websocket from a foreign page was accepted")
    except websocket.WebSocketBadStatusException as err:
        assert err.status_code == 403
    for host in (own, f"localhost:{visdom_server.endpoint.port}"):  # the page's own requests
        assert _request(visdom_server, "GET", f"/env/{run_name}", {"Host": host})[0] == 200
    same = {"Host": own, "Origin": f"http://{own}"}
    text = {"data": [{"content": "y", "type": "text"}], "win": "v", "eid": run_name}
    assert _request(visdom_server, "POST", "/events", same, json.dumps(text).encode())[0] == 200
    assert reader.has_window(run_name, "v")


def test_files_visdom_creates_are_private(visdom_server: VisdomServer, run_name: str) -> None:
    client = VisdomClient(visdom_server.endpoint)
    client.post("events", {"data": [{"content": "x", "type": "text"}], "win": "w", "eid": run_name})
    client.post("save", {"data": [run_name]})
    env_file = visdom_server.env_path / f"{run_name}.json"
    deadline = time.monotonic() + 10
    while not env_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert env_file.stat().st_mode & 0o077 == 0, oct(env_file.stat().st_mode)


class _LoginServer(VisdomServer):
    """Our server with visdom's login on at a loopback address (the tests stay on loopback)."""

    @property
    def login_enabled(self) -> bool:
        return True


def test_with_login_the_cookie_secret_is_private(tmp_path: Path, monkeypatch) -> None:
    # visdom keeps it in ~/.visdom whatever -env_path says; world-readable, any local user
    # could sign a login cookie with it.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("VISDOM_COOKIE", raising=False)
    secret = tmp_path / ".visdom" / "COOKIE_SECRET"
    for existing in (False, True):  # created by visdom at its first login start, then reused
        if existing:
            secret.chmod(0o644)
        endpoint = VisdomEndpoint("127.0.0.1", free_port(), "ada", "lovelace")
        with _LoginServer(endpoint, tmp_path / "envs", tmp_path / f"visdom-{existing}.log"):
            assert secret.is_file() and secret.stat().st_mode & 0o777 == 0o600, existing
            assert json.loads(VisdomClient(endpoint).post("env_state", {})) is not None
            guest = VisdomClient(VisdomEndpoint("127.0.0.1", endpoint.port))
            with pytest.raises(VisdomRequestError):
                guest.post("env_state", {})


def test_with_login_the_page_events_reach_the_listener_through_its_cookie(
    tmp_path: Path, monkeypatch, run_name: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    endpoint = VisdomEndpoint("127.0.0.1", free_port(), "ada", "lovelace")
    with _LoginServer(endpoint, tmp_path / "envs", tmp_path / "visdom.log"):
        client = VisdomClient(endpoint)
        client.post("events", controls_message(run_name, ViewSettings()))
        mine = client.events.subscribe(run_name, CONTROLS_WIN)
        url = f"ws://127.0.0.1:{endpoint.port}/socket"
        page = websocket.create_connection(url, header=client.cookie_header())
        event = {"target": CONTROLS_WIN, "eid": run_name, "event_type": "PropertyUpdate"}

        def heard() -> bool:  # sent until the listener, opened in the background, files one
            page.send(json.dumps({"cmd": "forward_to_vis", "data": event}))
            return not mine.empty()

        try:
            wait_until(heard, timeout=30, interval=0.3)
        finally:
            page.close()
            client.close()
        assert mine.get_nowait()["event_type"] == "PropertyUpdate"


def test_a_page_opened_before_its_env_exists_shows_its_windows_as_they_come(
    visdom_server: VisdomServer, run_name: str, chromium_driver: Any
) -> None:
    # A printed URL opened at once: a comparison env is made only once two runs have data.
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}_compare")
    assert chromium_driver.execute_script("return ACTIVE_ENV") == f"{run_name}_compare"
    time.sleep(1)  # the page has asked for its env, which has no window yet
    text = {"data": [{"content": "arrived", "type": "text"}], "win": "w", "opts": {}}
    VisdomClient(visdom_server.endpoint).post("events", {**text, "eid": f"{run_name}_compare"})
    wait_until(lambda: "arrived" in chromium_driver.page_source, timeout=30)
    # visdom writes env names into the page's script as quoted strings, escaping HTML only.
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}%5C")
    assert chromium_driver.execute_script("return ACTIVE_ENV") != f"{run_name}\\"


def _received(ws: websocket.WebSocket, quiet_s: float = 1.0) -> list[dict]:
    """What the socket got until it was quiet for ``quiet_s``."""
    ws.settimeout(quiet_s)
    messages = []
    try:
        while True:
            messages.append(json.loads(ws.recv()))
    except websocket.WebSocketTimeoutException:
        return messages


def test_a_page_gets_no_windows_of_main_before_it_asks_for_its_env(
    visdom_server: VisdomServer, run_name: str
) -> None:
    client = VisdomClient(visdom_server.endpoint)
    text = {"data": [{"content": "x", "type": "text"}], "opts": {}}
    client.post("events", {**text, "eid": run_name, "win": "mine"})
    ws = websocket.create_connection(
        f"ws://{visdom_server.endpoint.host}:{visdom_server.endpoint.port}/socket"
    )
    try:
        sid = json.loads(ws.recv())["data"]  # registered, its env not asked for yet
        _received(ws, 0.5)
        # The runs index, re-sent while the page's request for its env is on its way.
        client.post("events", {**text, "eid": "main", "win": f"index_{run_name}"})
        assert [m.get("id") for m in _received(ws) if "id" in m] == []
        client.post(f"env/{run_name}", {"sid": sid})
        assert [m.get("id") for m in _received(ws) if "id" in m] == ["mine"]
    finally:
        ws.close()
