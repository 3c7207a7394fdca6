"""The viewer's page-event listener is told which envs open pages show, against the real server."""

from __future__ import annotations

import json

import pytest
import websocket

from tests.fixtures.servers.waiting import wait_until
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.process import VisdomServer
from visualizer.server.watched import PAGES_COMMAND
from visualizer.visdom_client import VisdomClient

pytestmark = pytest.mark.integration


def _page(server: VisdomServer) -> tuple[websocket.WebSocket, str]:
    """A page's socket, registered, and its id (what the page posts naming its env)."""
    url = f"ws://{server.endpoint.host}:{server.endpoint.port}/socket"
    ws = websocket.create_connection(url)
    return ws, json.loads(ws.recv())["data"]


def _window(client: VisdomClient, env: str) -> None:
    client.post("events", {"data": [{"content": "x", "type": "text"}], "win": "w", "eid": env})


def _shown(client: VisdomClient) -> frozenset[str]:
    pages = client.events.pages
    assert pages is not None, "the server told nothing"
    return pages


def test_pages_opening_an_env_a_comparison_and_closing_are_told(visdom_server, run_name):
    client = VisdomClient(visdom_server.endpoint)
    client.events.subscribe(run_name, "w")  # starts the listener, told the envs as it connects
    first, second = run_name, f"{run_name}_b"
    for env in (first, second):
        _window(client, env)
    page, sid = _page(visdom_server)
    try:
        wait_until(lambda: client.events.pages is not None)
        assert first not in _shown(client), "a page on no env yet shows none"
        client.post(f"env/{first}", {"sid": sid})
        wait_until(lambda: first in _shown(client))
        other, other_sid = _page(visdom_server)
        client.post(f"compare/{first}+{second}", {"sid": other_sid})
        wait_until(lambda: {first, second} <= _shown(client))
        other.close()
        wait_until(lambda: second not in _shown(client) and first in _shown(client))
    finally:
        page.close()
    wait_until(lambda: first not in _shown(client))
    client.close()


def test_a_page_can_not_tell_the_listener_what_pages_show(visdom_server, run_name):
    client = VisdomClient(visdom_server.endpoint)
    _window(client, run_name)  # visdom forwards events of envs it has
    client.events.subscribe(run_name, "w")
    page, _ = _page(visdom_server)
    forged = {"command": PAGES_COMMAND, "envs": [run_name], "eid": run_name, "target": "w"}
    try:
        wait_until(lambda: client.events.pages is not None)
        page.send(json.dumps({"cmd": "forward_to_vis", "data": forged | {"pane_data": False}}))
        # The page's next event arrives, the forged one before it never did.
        event = {"eid": run_name, "target": "w", "pane_data": False, "event_type": "Close"}
        queue = client.events.subscribe(run_name, "w")
        page.send(json.dumps({"cmd": "forward_to_vis", "data": event}))
        assert wait_until(lambda: queue.get(timeout=1))["event_type"] == "Close"
        assert run_name not in _shown(client)
    finally:
        page.close()
        client.close()


@pytest.mark.parametrize("envs", [None, "run", [1], [["run"]], {"run": 0}])
def test_a_pages_message_of_another_shape_changes_nothing(envs):
    events = VisdomClient(VisdomEndpoint("127.0.0.1", 9)).events  # never connected
    events._file([json.dumps({"command": PAGES_COMMAND, "envs": envs})])
    assert events.pages is None
    assert events._file([json.dumps({"command": PAGES_COMMAND, "envs": ["run"]})])
    assert events.pages == frozenset(["run"])
    events._file([json.dumps({"command": PAGES_COMMAND, "envs": envs})])
    assert events.pages == frozenset(["run"])
