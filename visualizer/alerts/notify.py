"""Delivering alerts off the follow loop: a webhook POST, or a user's ``--alert-cmd`` plugin.

Each destination has its own worker thread and queue, so a slow or dead one
never holds up the follower, nor the other destination. A failed delivery is
logged and retried :data:`ATTEMPTS` times in all, waiting ever longer between
tries (:data:`FIRST_RETRY_S`, doubling); then it is given up, with an error.
An alert is remembered as sent (:class:`~visualizer.alerts.rules.AlertMemory`) once
every destination is done with it; one still queued when the visualizer exits
is sent again by the next one.

A webhook URL holds its secret in its path (Slack, Discord) or its query: it is
shown as its origin only, through the project's redaction rule.
"""

from __future__ import annotations

import inspect
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from snapshot_store.values import redact_text

from .rules import Alert, AlertMemory

log = logging.getLogger(__name__)

ATTEMPTS = 5
FIRST_RETRY_S = 1.0
HTTP_TIMEOUT_S = 10.0
DISCORD_MAX_CHARS = 2000  # Discord refuses a longer "content"
NTFY_EXAMPLE = "https://ntfy.sh/TOPIC?tpl=1&t={{.title}}&m={{.text}}"


def describe_webhook(url: str) -> str:
    """What may be shown of a webhook URL: its scheme and host, never its path or query."""
    parts = urllib.parse.urlsplit(url)
    return redact_text(f"{parts.scheme}://{parts.netloc}/") + (
        "..." if parts.path.strip("/") else ""
    )


def check_webhook(url: str) -> str:
    """``url`` when it is an http(s) URL with a host; ValueError (not quoting it) when not."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{describe_webhook(url) if parts.netloc else 'the value'} is not an http:// or "
            "https:// URL (e.g. a Slack or Discord webhook URL, or " + NTFY_EXAMPLE + ")"
        )
    return url


def webhook_body(alert: Alert) -> dict[str, Any]:
    """One JSON body for Slack (``text``), Discord (``content``) and ntfy templates, with the fields.

    A run's name is data, never markup: Slack's control characters are escaped
    in ``text`` (a run named ``<!channel>`` pings nobody), and Discord is told to
    resolve no mention in ``content``.
    """
    slack = alert.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return {
        **alert.as_dict(),
        "text": slack,
        "content": alert.text[:DISCORD_MAX_CHARS],
        "allowed_mentions": {"parse": []},
    }


def post_webhook(url: str, alert: Alert) -> None:
    """POST ``alert`` as JSON to ``url``; raises on a refused connection or a non-2xx answer."""
    request = urllib.request.Request(
        url,
        data=json.dumps(webhook_body(alert)).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "remote-train-monitor"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
        answer.read()


def check_plugin(plugin: Callable[..., object], spec: str) -> None:
    """ValueError unless ``plugin(alert)`` binds (one positional argument)."""
    try:
        signature = inspect.signature(plugin)
    except (TypeError, ValueError):  # a builtin without a signature: its first call will tell
        return
    try:
        signature.bind({})
    except TypeError:
        name = spec.rsplit(".", 1)[-1]
        raise ValueError(
            f"--alert-cmd {spec}: {spec}{signature} can not be called with one alert: "
            f"define it as def {name}(alert) (alert is a dict: run, event, detail, url, text, ...)"
        ) from None


class Destination:
    """One place alerts go, with its own worker thread."""

    def __init__(
        self, name: str, deliver: Callable[[Alert], object], done: Callable[[Alert], None]
    ):
        self.name, self.deliver, self.done = name, deliver, done
        self.queue: queue.Queue[Alert | None] = queue.Queue()
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._work, name=f"alerts {name}", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while (alert := self.queue.get()) is not None:
            self._send(alert)

    def _send(self, alert: Alert) -> None:
        delay = FIRST_RETRY_S
        for attempt in range(1, ATTEMPTS + 1):
            try:
                self.deliver(alert)
            except Exception as err:  # the user's plugin, the network: never the follower's end
                reason = redact_text(f"{type(err).__name__}: {err}")
                if attempt == ATTEMPTS:
                    log.error(
                        "alert %r of run %r to %s not delivered after %d attempts: %s",
                        alert.event, alert.run, self.name, ATTEMPTS, reason,
                    )  # fmt: skip
                    break
                log.warning(
                    "alert %r of run %r to %s failed (attempt %d of %d: %s); retrying in %g s",
                    alert.event, alert.run, self.name, attempt, ATTEMPTS, reason, delay,
                )  # fmt: skip
                if self.closing.wait(delay):
                    log.warning(
                        "alert %r of run %r to %s: not sent before exit",
                        alert.event,
                        alert.run,
                        self.name,
                    )
                    return  # not remembered: the next visualizer sends it
                delay *= 2
            else:
                log.info("alert %r of run %r sent to %s", alert.event, alert.run, self.name)
                break
        self.done(alert)


class AlertSender:
    """Hands each alert to every destination; remembers it once all are done with it."""

    def __init__(self, memory: AlertMemory) -> None:
        self.memory = memory
        self.destinations: list[Destination] = []
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], int] = {}

    def add_webhook(self, url: str) -> None:
        """Send alerts as JSON POSTs to ``url``."""
        self.destinations.append(
            Destination(describe_webhook(url), lambda a: post_webhook(url, a), self._done)
        )

    def add_plugin(self, spec: str, plugin: Callable[..., object]) -> None:
        """Send alerts by calling ``plugin(alert_dict)``."""
        self.destinations.append(Destination(spec, lambda a: plugin(a.as_dict()), self._done))

    def send(self, alert: Alert) -> None:
        """Queue ``alert`` for every destination; returns at once."""
        with self._lock:
            self._pending[(alert.run, alert.key)] = len(self.destinations)
        for destination in self.destinations:
            destination.queue.put(alert)

    def _done(self, alert: Alert) -> None:
        with self._lock:
            left = self._pending[(alert.run, alert.key)] = self._pending[(alert.run, alert.key)] - 1
        if left == 0:
            self.memory.remember(alert.run, [alert.key])

    def close(self, timeout: float) -> None:
        """Try what is queued once more (no waits between tries), for ``timeout`` seconds in all.

        What is not delivered by then is not remembered: the next visualizer sends it.
        """
        deadline = time.monotonic() + timeout
        for destination in self.destinations:
            destination.closing.set()
            destination.queue.put(None)
        for destination in self.destinations:
            destination.thread.join(max(0.0, deadline - time.monotonic()))
