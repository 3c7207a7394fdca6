"""A webhook try: the JSON body Slack, Discord and ntfy read, POSTed within a deadline.

A try has a deadline as a whole (:data:`TRY_DEADLINE_S`: connecting, sending,
the answer read to its end), not per read: a receiver trickling a byte at a time
is cut off there. Only a 2xx answer delivers; a redirect is not followed (urllib
would resend the alert as a GET without its body, perhaps to another host). A
``user:password@`` in the URL is sent as HTTP Basic authentication, never shown:
a webhook URL is shown as its origin only, through the project's redaction rule
(its secret may be in its path, as Slack's and Discord's are, or its query).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from run_core.redaction import redact_text

from .alert import Alert

TRY_DEADLINE_S = 10.0
# Where a webhook URL is read from when no option gives one: the URL is a secret, and a
# command line is visible to every user of the machine (ps).
WEBHOOK_VAR = "ALERT_WEBHOOK_URL"
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


def webhook_from_environment() -> str | None:
    """``$ALERT_WEBHOOK_URL``, checked as an option's URL is; None when it is not set."""
    url = os.environ.get(WEBHOOK_VAR, "").strip()
    if not url:
        return None
    try:
        return check_webhook(url)
    except ValueError as err:
        raise ValueError(f"${WEBHOOK_VAR}: {err}") from None


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


class _Try:
    """One webhook try's deadline: when it passes, the try's connections are shut down,
    whatever they wait for (a timeout per read never ends a receiver that trickles)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Try:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            for watched in self._watched:
                watched.close()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for watched in self._watched:
                _shut(watched)

    def _connect(
        self, address: tuple[str, int], timeout: float, source: tuple[str, int] | None = None
    ) -> socket.socket:
        sock = socket.create_connection(address, timeout, source)
        with self._lock:
            # A dup is the same connection, and stays usable when TLS takes over sock's descriptor.
            self._watched.append(sock.dup())
            if self.expired:
                _shut(self._watched[-1])
        return sock

    def connection(self, cls: type[http.client.HTTPConnection]) -> Callable[..., Any]:
        """``cls``, its sockets made through this try."""

        def make(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
            conn = cls(*args, **kwargs)
            conn._create_connection = self._connect  # type: ignore[attr-defined]  # its seam
            return conn

        return make

    def opener(self) -> urllib.request.OpenerDirector:
        """urllib's opener (proxies from the environment included), through this try, no redirect."""
        attempt = self

        class HTTP(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(attempt.connection(http.client.HTTPConnection), req)

        class HTTPS(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                connection = attempt.connection(http.client.HTTPSConnection)
                return self.do_open(connection, req, context=self._context)  # type: ignore[attr-defined]

        return urllib.request.build_opener(_NoRedirect(), HTTP(), HTTPS())


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked read on the same connection
    except OSError:
        pass  # already closed


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are failures: urllib would resend a POST as a GET without its body."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


def _credentials(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its ``user:password@``, and the Basic authorization header it stood for."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, {}
    login = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
    netloc = parts.netloc.rpartition("@")[2]
    token = base64.b64encode(login.encode()).decode()
    return parts._replace(netloc=netloc).geturl(), {"Authorization": f"Basic {token}"}


def post_webhook(url: str, alert: Alert, deadline: float = TRY_DEADLINE_S) -> None:
    """POST ``alert`` as JSON to ``url``; raises on a refused connection, an answer that is
    not 2xx (a redirect included) or one not read to its end within ``deadline`` seconds."""
    target, authorization = _credentials(url)
    request = urllib.request.Request(
        target,
        data=json.dumps(webhook_body(alert)).encode(),
        headers={
            "Content-Type": "application/json",
            "User-Agent": "remote-train-monitor",
            **authorization,
        },
        method="POST",
    )
    with _Try(deadline) as attempt:
        try:
            with attempt.opener().open(request, timeout=deadline) as answer:
                answer.read()
        except Exception:
            if attempt.expired:  # the read failed because the deadline shut the connection
                raise TimeoutError(f"no whole answer within {deadline:g} s") from None
            raise
