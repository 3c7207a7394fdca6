"""Page events reach the visualizer: a page's socket forwards pane events, VisdomEvents files them."""

from __future__ import annotations

import json

import pytest
import websocket

from tests.fixtures.servers.waiting import wait_until
from visualizer.panes.view import CONTROLS_WIN, ViewSettings, controls_message
from visualizer.visdom_client import VisdomClient

pytestmark = pytest.mark.integration


def test_pane_events_are_filed_in_order_under_their_env_and_window(visdom_server, run_name):
    client = VisdomClient(visdom_server.endpoint)
    client.post("events", controls_message(run_name, ViewSettings()))
    woken = []
    client.events.on_event = lambda: woken.append(True)
    mine = client.events.subscribe(run_name, CONTROLS_WIN)
    other = client.events.subscribe(f"{run_name}-other", CONTROLS_WIN)
    # The page's side: visdom's own browser socket, sending what its properties pane sends.
    page = websocket.create_connection(f"ws://127.0.0.1:{visdom_server.endpoint.port}/socket")

    def send(value: str) -> None:
        message = {"event_type": "PropertyUpdate", "propertyId": 0, "value": value}
        data = {"target": CONTROLS_WIN, "eid": run_name, **message}
        page.send(json.dumps({"cmd": "forward_to_vis", "data": data}))

    try:
        # The listener opens in the background; until it has, events are not for us yet.
        wait_until(lambda: send("probe") or _drain(mine), timeout=30, interval=0.3)
        _drain(mine)
        for value in ("0.7", "0.8", "0.9"):
            send(value)
        got: list[str] = []
        wait_until(lambda: got.extend(v for v in _drain(mine) if v != "probe") or len(got) == 3)
    finally:
        page.close()
        client.close()
    assert got == ["0.7", "0.8", "0.9"] and woken
    assert other.empty()


def test_junk_from_a_page_is_dropped_and_the_events_that_follow_still_arrive(
    visdom_server, run_name
):
    client = VisdomClient(visdom_server.endpoint)
    client.post("events", controls_message(run_name, ViewSettings()))
    mine = client.events.subscribe(run_name, CONTROLS_WIN)
    page = websocket.create_connection(f"ws://127.0.0.1:{visdom_server.endpoint.port}/socket")

    def send(target: object, value: object) -> None:
        data = {"target": target, "eid": run_name, "pane_data": False, "value": value}
        page.send(json.dumps({"cmd": "forward_to_vis", "data": data | {"propertyId": 0}}))

    nested: list = []
    for _ in range(200):
        nested = [nested]
    try:
        wait_until(lambda: send(CONTROLS_WIN, "probe") or _drain(mine), timeout=30, interval=0.3)
        _drain(mine)
        for junk in ([CONTROLS_WIN], {"win": CONTROLS_WIN}, None, 1e300, nested):
            send(junk, "junk")  # a window named by no string: filed nowhere
        send(CONTROLS_WIN, nested)
        for _ in range(500):  # a flood
            send(CONTROLS_WIN, "0.5")
        send(CONTROLS_WIN, "0.9")
        got: list = []
        wait_until(
            lambda: got.extend(v for v in _drain(mine) if v != "probe") or got[-1:] == ["0.9"]
        )
    finally:
        page.close()
        client.close()
    assert "junk" not in got and got[0] == nested and got.count("0.5") == 500


def _drain(events) -> list[str]:
    out = []
    while not events.empty():
        out.append(events.get_nowait()["value"])
    return out


def test_stopping_the_listener_ends_it_without_waiting_for_its_quiet_socket(
    visdom_server, run_name
):
    """Its read of a quiet socket waits CHECK_S to look whether to stop; a viewer's exit waited
    for it (0.7 s of 1.5 at 10,000 runs). Here a read waits longer than stop() joins."""
    client = VisdomClient(visdom_server.endpoint)
    events = client.events
    events.CHECK_S = 60.0  # this listener's reads: longer than stop()'s join of 5 s
    events.subscribe(run_name, CONTROLS_WIN)
    wait_until(lambda: events._open is not None, timeout=30)  # listening
    thread = events._thread
    client.close()
    assert thread is not None and not thread.is_alive(), "the listener outlived its stop"


def test_the_page_listener_outlives_the_follow_loops_longest_quiet_pause():
    # The loop renews its subscriptions at each pass; an idle S3 run's passes are up to a
    # minute apart. A listener that stopped sooner lost a page's zoom on a quiet run.
    from visualizer.follower import DEFAULT_MAX_IDLE_INTERVAL
    from visualizer.visdom_client import VisdomEvents

    assert VisdomEvents.IDLE_STOP_S > 2 * DEFAULT_MAX_IDLE_INTERVAL
