"""Delivering alerts: an unreachable webhook is logged and retried, its secret never shown."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from snapshot_store import Recorder
from tests.fixtures.alerting import POLL_S, SECRET, TIMEOUT, stop, visualizer
from tests.fixtures.net import free_port
from tests.fixtures.processes import first_line, reap
from tests.fixtures.waiting import wait_until
from visualizer.alerts.notify import describe_webhook, webhook_body
from visualizer.alerts.rules import Alert


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
