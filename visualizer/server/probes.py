"""Probes: does a visdom server (not just any HTTP server) answer, and does it serve its page?

Nothing here starts anything: :mod:`visualizer.server.process` waits on these
while its child starts, and the CLI asks them before it starts one.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from .endpoint import VisdomEndpoint

# visdom's login page says <title>Visdom Login</title> (its index page <title>visdom</title>).
_VISDOM_TITLE = re.compile(rb"<title>\s*visdom\b", re.IGNORECASE)


# Sent by a visdom that a visualizer started for itself (and stops when it exits): its pid.
OWNER_HEADER = "X-Visualizer-Pid"


def _http(
    endpoint: VisdomEndpoint,
    method: str,
    path: str,
    body: bytes | None,
    timeout: float,
    header: str = "Server",
) -> tuple[int, str, bytes]:
    """One HTTP request; returns (status, ``header``'s value, first 64 KiB of the body)."""
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.getheader(header, ""), resp.read(64 * 1024)
    finally:
        conn.close()


def _is_env_list(body: bytes) -> bool:
    try:
        envs = json.loads(body)
    except ValueError:
        return False
    return isinstance(envs, list) and all(isinstance(e, str) for e in envs)


def visdom_answers(endpoint: VisdomEndpoint, timeout: float = 1.0) -> bool:
    """True only if a visdom server (not just any HTTP server) answers at ``endpoint``.

    Asks visdom's own API (``POST /env_state`` lists the envs); a server with
    login enabled refuses that, so then its login page must be the one served at ``/``.
    """
    try:
        status, server, body = _http(endpoint, "POST", "/env_state", b"{}", timeout)
        if not server.startswith("TornadoServer"):
            return False
        if status == 200:
            return _is_env_list(body)
        status, server, body = _http(endpoint, "GET", "/", None, timeout)
    except (OSError, http.client.HTTPException):
        return False
    return status == 200 and bool(_VISDOM_TITLE.search(body))


def owning_visualizer(endpoint: VisdomEndpoint, timeout: float = 1.0) -> int | None:
    """The pid of the visualizer that started the visdom answering at ``endpoint`` for itself
    (it stops that visdom when it exits); None for a visdom no visualizer owns."""
    try:
        _, owner, _ = _http(endpoint, "POST", "/env_state", b"{}", timeout, OWNER_HEADER)
    except (OSError, http.client.HTTPException):
        return None
    return int(owner) if owner.isdigit() else None


def port_open(endpoint: VisdomEndpoint, timeout: float = 1.0) -> bool:
    """True when something accepts TCP connections at ``endpoint`` (visdom or not)."""
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout):
            return True
    except OSError:
        return False


class _PageAssets(HTMLParser):
    """Collects what a page loads: each ``<script src>`` and ``<link href>``."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script" and found.get("src"):
            self.urls.append(str(found["src"]))
        elif tag == "link" and found.get("href"):
            self.urls.append(str(found["href"]))


def page_asset_failures(endpoint: VisdomEndpoint, timeout: float = 10.0) -> list[str]:
    """What visdom's page at ``/`` loads but the server does not serve: ``path (status)`` each.

    Every ``<script src>`` and ``<link href>`` (stylesheets, the icon) of the
    page is fetched; files on other sites are skipped. An empty list means the
    page can render.
    """
    try:
        status, _, body = _http(endpoint, "GET", "/", None, timeout)
    except (OSError, http.client.HTTPException) as err:
        return [f"/ ({err})"]
    if status != 200:
        return [f"/ (HTTP {status})"]
    parser = _PageAssets()
    parser.feed(body.decode("utf-8", errors="replace"))
    failures = []
    for url in parser.urls:
        parts = urlsplit(urljoin(f"{endpoint.url}/", url))
        if parts.netloc and parts.netloc != urlsplit(endpoint.url).netloc:
            continue  # another site's file: not this server's to serve
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            status, _, _ = _http(endpoint, "GET", path, None, timeout)
        except (OSError, http.client.HTTPException) as err:
            failures.append(f"{parts.path} ({err})")
            continue
        if status != 200:
            failures.append(f"{parts.path} (HTTP {status})")
    return failures
