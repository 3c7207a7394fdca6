"""The one rule every HTTP server of the visualizer answers by: its own origin only.

visdom (patched in :mod:`visualizer.server.child`) and the CSV downloads
(:mod:`visualizer.sources.download`) both listen on the user's machine, where any
web page the user opens can reach them. A page of ``evil.example`` whose name
now resolves to 127.0.0.1 (DNS rebinding) sends ``Host: evil.example``; a page
posting across origins sends its own ``Origin``. So a loopback server answers
only loopback host names, and a request carrying an ``Origin`` (a browser's)
must come from the server's own host and port.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
# What a request without a Host header (HTTP/1.0) is taken to be for, as tornado takes it.
_DEFAULT_HOST = "127.0.0.1"
_PORT = re.compile(r"^(.+):(\d+)$")  # tornado's split of host and port


def refusal(host: str | None, origin: str | None, loopback: bool) -> str | None:
    """Why a request with these ``Host`` and ``Origin`` headers is refused (one line); None: answer it.

    ``loopback``: the server listens on the loopback interface only.
    """
    host = (host or _DEFAULT_HOST).lower()
    match = _PORT.match(host)
    name = match.group(1) if match else host
    if loopback and name not in LOOPBACK_NAMES:
        return "this server answers only for its own address"
    if origin is not None and _netloc(origin) != host:
        return "cross-origin requests are refused"
    return None


def _netloc(origin: str) -> str | None:
    """The host and port of an ``Origin`` header, lower case; None when it is no URL."""
    try:
        return urlsplit(origin).netloc.lower()
    except ValueError:  # "http://[evil": a bracket left open
        return None
