"""Delivering alerts: an unreachable, slow or redirecting webhook is logged and retried, never
remembered as sent undelivered, and holds up no other run's alert; a run's alerts arrive in the
order sent; a webhook's secret is never shown."""

from __future__ import annotations

import base64
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest

from snapshot_store import Recorder
from snapshot_store.alerting import delivery
from snapshot_store.alerting.alert import Alert
from snapshot_store.alerting.delivery import ATTEMPTS, SENDS_AT_ONCE, AlertSender
from snapshot_store.alerting.webhook import (
    TRY_DEADLINE_S,
    describe_webhook,
    post_webhook,
    webhook_body,
)
from tests.fixtures.servers.alerting import POLL_S, SECRET, TIMEOUT, Receiver, stop, visualizer
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import first_line, reap
from tests.fixtures.servers.waiting import wait_until
from visualizer.alerts.rules import AlertMemory


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_an_unreachable_webhook_is_logged_and_retried_and_following_goes_on(
    tmp_path, visdom_server
):
    runs, log = tmp_path / "runs", tmp_path / "visualizer.log"
    dead = f"http://user:pw@127.0.0.1:{free_port()}/services/T0/B0/{SECRET}"  # nothing listens
    rec = Recorder(runs / "exp1" / "pickle", flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    proc = visualizer(
        runs, visdom_server.endpoint, tmp_path / "state", log, "--alert-webhook", dead
    )
    try:
        assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
        time.sleep(2 * POLL_S)
        rec.close()
        wait_until(lambda: "attempt 2 of 5" in log.read_text(), 30)
        assert proc.poll() is None  # still following
        text = stop(proc, log)
    finally:
        reap(proc)
        rec.close()
    assert "alert 'finished' of run 'exp1' to http://user:***@127.0.0.1:" in text
    assert "failed (attempt 1 of 5: URLError" in text and "retrying in 2 s" in text
    assert SECRET not in text and ":pw@" not in text and "Traceback" not in text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.slack.com/services/T000/B000/XXXXXXXX", "https://hooks.slack.com/..."),
        ("https://discord.com/api/webhooks/123/tok-en", "https://discord.com/..."),
        ("https://ntfy.sh/my-topic?tpl=1&m={{.text}}", "https://ntfy.sh/..."),
        ("https://me:pw@ntfy.example.org/", "https://me:***@ntfy.example.org/"),
    ],
)
def test_a_webhook_is_shown_as_its_origin_only(url, shown):
    assert describe_webhook(url) == shown


def test_the_body_is_what_slack_discord_and_ntfy_templates_read():
    alert = Alert("exp1", "failed", "failed at step 3", "http://h/env/exp1", "failed@1.0", 2.0)
    body = webhook_body(alert)
    text = "run 'exp1' failed at step 3 (failed): http://h/env/exp1"
    assert body["text"] == body["content"] == text  # Slack, Discord
    assert body["title"] == "exp1: failed"  # ntfy's t={{.title}}
    assert (body["run"], body["event"], body["url"]) == ("exp1", "failed", "http://h/env/exp1")
    assert len(webhook_body(replace(alert, detail="x" * 3000))["content"]) == 2000  # Discord's most
    loud = webhook_body(replace(alert, run="<!channel> & @everyone"))  # data, not markup
    assert loud["text"].startswith("run '&lt;!channel&gt; &amp; @everyone' failed")
    assert loud["content"].startswith("run '<!channel> & @everyone' failed")
    assert loud["allowed_mentions"] == {"parse": []}  # Discord pings nobody


def finished(run: str) -> Alert:
    return Alert(
        run, "finished", "finished at step 3", f"http://h/env/{run}", f"finished@{run}", 1.0
    )


def rule(run: str) -> Alert:
    return replace(finished(run), event="rule", key=f"rule@{run}")


@pytest.fixture
def memory(tmp_path) -> AlertMemory:
    return AlertMemory(tmp_path / "sent.json", "runs")


@contextmanager
def sending(memory: AlertMemory, *receivers: Receiver) -> Iterator[AlertSender]:
    """An :class:`AlertSender` to ``receivers``' URLs; closed (and its threads ended) after."""
    sender = AlertSender(memory.delivered)
    for receiver in receivers:
        sender.add_webhook(receiver.url)
    try:
        yield sender
    finally:
        for receiver in receivers:
            receiver.closed.set()  # a try still trickling ends now, not at its deadline
        sender.close(TIMEOUT)
        assert not any(t.is_alive() for d in sender.destinations for t in d.threads)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_slow_webhook_is_cut_at_its_deadline_and_holds_up_no_other_alert(
    receivers: Callable[..., Receiver], memory, caplog
):
    """A receiver that trickles its answer a byte a second, beside a healthy one: every alert
    reaches both at once, each slow try is abandoned at its deadline and retried."""
    caplog.set_level(logging.INFO, "visualizer.alerts")
    slow, healthy = receivers(trickle=1.0), receivers()
    runs = [f"run{i}" for i in range(6)]
    with sending(memory, slow, healthy) as sender:
        for run in runs:
            sender.send(finished(run))
        # Within one try's deadline: before any of the slow receiver's tries could end.
        wait_until(lambda: sorted(a["run"] for _, a in healthy.alerts()) == runs, TRY_DEADLINE_S)
        wait_until(lambda: sorted(a["run"] for _, a in slow.alerts()) == runs, TRY_DEADLINE_S)
        cut = f"run 'run0' to {describe_webhook(slow.url)} failed (attempt 1 of {ATTEMPTS}: "
        cut += f"TimeoutError: no whole answer within {TRY_DEADLINE_S:g} s); retrying in 1 s"
        wait_until(lambda: cut in caplog.text, TIMEOUT)
        wait_until(lambda: len(slow.of("run0")) == 2, TIMEOUT)  # tried again
    assert not any(memory.sent(run, f"finished@{run}") for run in runs)  # the slow one has none


def test_a_runs_alerts_arrive_in_order_and_its_slow_one_holds_up_no_other_run(memory):
    """Run a's first alert hangs in the plugin: a's next waits for it; b's is sent meanwhile."""
    release, arrived = threading.Event(), []

    def plugin(alert: dict) -> None:
        if alert["key"] == "rule@a":
            release.wait(TIMEOUT)
        arrived.append((alert["run"], alert["event"]))

    sender = AlertSender(memory.delivered)
    sender.add_plugin("myalerts.notify", plugin)
    for alert in (rule("a"), finished("a"), finished("b")):
        sender.send(alert)
    wait_until(lambda: arrived == [("b", "finished")], TIMEOUT)
    release.set()
    sender.close(TIMEOUT)
    assert arrived == [("b", "finished"), ("a", "rule"), ("a", "finished")]
    assert all(memory.sent(run, key) for run, key in (("a", "rule@a"), ("a", "finished@a")))


def test_a_plugin_call_that_does_not_return_is_given_up_at_its_deadline(
    memory, caplog, monkeypatch
):
    """A hung call: its alert is given up (not tried again, not remembered) and the run's next
    alert is sent; while 8 calls hang, the plugin's alerts are given up without a call. A
    ``sys.exit()`` in the plugin is a failed try."""
    monkeypatch.setattr(delivery, "PLUGIN_DEADLINE_S", 1.0)
    monkeypatch.setattr(delivery, "FIRST_RETRY_S", 0.01)
    release, calls = threading.Event(), []

    def plugin(alert: dict) -> None:
        calls.append(alert["key"])
        if alert["event"] == "rule":
            release.wait(TIMEOUT)
        if alert["run"] == "exits":
            sys.exit(3)

    sender = AlertSender(memory.delivered)
    sender.add_plugin("myalerts.notify", plugin)
    sender.send(rule("a"))
    sender.send(finished("a"))
    wait_until(lambda: memory.sent("a", "finished@a"), TIMEOUT)
    assert calls == ["rule@a", "finished@a"] and not memory.sent("a", "rule@a")
    given_up = "alert 'rule' of run 'a' to myalerts.notify given up: the call did not return "
    assert given_up + "within 1 s; not remembered as sent" in caplog.text
    for i in range(1, SENDS_AT_ONCE):
        sender.send(rule(f"r{i}"))
    wait_until(lambda: caplog.text.count("did not return within") == SENDS_AT_ONCE, TIMEOUT)
    sender.send(finished("b"))
    refused = f"run 'b' to myalerts.notify given up: {SENDS_AT_ONCE} earlier calls have not"
    wait_until(lambda: refused in caplog.text, TIMEOUT)
    assert "finished@b" not in calls and not memory.sent("b", "finished@b")
    release.set()  # the hung calls return (their threads end): the plugin is called again
    wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith("alert-cmd")])
    sender.send(finished("c"))
    wait_until(lambda: memory.sent("c", "finished@c"), TIMEOUT)
    sender.send(finished("exits"))
    exited = f"not delivered after {ATTEMPTS} attempts: RuntimeError: SystemExit(3)"
    wait_until(lambda: exited in caplog.text, TIMEOUT)
    sender.close(TIMEOUT)
    assert calls.count("finished@exits") == ATTEMPTS


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_redirect_is_a_failure_retried_and_never_remembered_as_sent(
    receivers: Callable[..., Receiver], memory, caplog
):
    """A 302 to another host is not followed: the alert would arrive there a GET, without body."""
    caplog.set_level(logging.INFO, "visualizer.alerts")
    elsewhere = receivers()
    moved = receivers(status=302, headers={"Location": elsewhere.url})
    with sending(memory, moved) as sender:
        sender.send(finished("exp1"))
        wait_until(lambda: f"not delivered after {ATTEMPTS} attempts" in caplog.text, TIMEOUT)
    assert [method for _, method, _, _ in moved.requests()] == ["POST"] * ATTEMPTS
    assert elsewhere.requests() == []
    assert "failed (attempt 1 of 5: HTTPError: HTTP Error 302: Found); retrying" in caplog.text
    assert "sent to" not in caplog.text
    assert not memory.sent("exp1", "finished@exp1")
    assert not AlertMemory(memory.path, "runs").sent("exp1", "finished@exp1")  # nor on disk


def test_a_login_in_a_webhook_url_is_sent_as_basic_authentication(receiver: Receiver):
    with_login = receiver.url.replace("http://", "http://alerts:p%40ss:w@")
    post_webhook(with_login, finished("exp1"))
    ((_, method, headers, body),) = receiver.requests()
    assert (method, body["run"]) == ("POST", "exp1")
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"alerts:p@ss:w").decode()
    assert describe_webhook(with_login).startswith("http://alerts:***@127.0.0.1:")
