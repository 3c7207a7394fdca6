"""Where visdom is: host, port and login, for the CLI, the server and the client alike.

This module owns the defaults (``127.0.0.1:8097``), the spellings ``--server``
accepts, and the ``VISDOM_USERNAME``/``VISDOM_PASSWORD`` variables; nothing
else in the visualizer reads them.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from run_core.redaction import redact_text

DEFAULT_HOST = "127.0.0.1"
DEFAULT_VISDOM_PORT = 8097
# visdom's own names for its login; its server reads them too (see server.py).
USERNAME_VAR = "VISDOM_USERNAME"
PASSWORD_VAR = "VISDOM_PASSWORD"

# A DNS name or an IPv4 literal: letters, digits, '-', '_' and dots between labels.
_HOSTNAME = re.compile(
    r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?"
)
# What ``--server`` accepts, as help and error messages name it.
SERVER_FORMS = "a host (127.0.0.1, localhost, [::1]) or http://host[:port]"


@dataclass(frozen=True)
class VisdomEndpoint:
    """One visdom server: ``host`` (IPv6 literals without brackets), ``port`` and its login, if any."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_VISDOM_PORT
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """Base URL of the server's page, ``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def env_url(self, env: str) -> str:
        """URL of visdom's page for one env, ``http://host:port/env/<env>``."""
        return f"{self.url}/env/{quote(env, safe='')}"

    @property
    def is_loopback(self) -> bool:
        """True for ``localhost`` and loopback IP literals; other names are reachable from outside."""
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @classmethod
    def parse(
        cls,
        server: str = DEFAULT_HOST,
        port: int | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> VisdomEndpoint:
        """The endpoint a ``--server`` (and ``--port``) value names, with the login from ``environ``.

        ``port`` is the ``--port`` option: None takes the URL's port, else 8097;
        a URL whose port differs from it is refused rather than guessed at.
        ``environ`` defaults to ``os.environ``. Raises ValueError, naming what
        is accepted, for anything else.
        """
        host, url_port = _split_server(server)
        shown = redact_text(server)  # messages are printed: never the login
        if port is not None and url_port is not None and port != url_port:
            raise ValueError(
                f"{shown!r} names port {url_port} but --port is {port}: give one of them"
            )
        chosen = next((p for p in (url_port, port) if p is not None), DEFAULT_VISDOM_PORT)
        if not 0 < chosen < 65536:
            raise ValueError(f"visdom port {chosen} is outside 1-65535")
        env = os.environ if environ is None else environ
        return cls(host, chosen, env.get(USERNAME_VAR) or None, env.get(PASSWORD_VAR) or None)


def _split_server(server: str) -> tuple[str, int | None]:
    """``(host, port or None)`` of a ``--server`` value; ValueError when it names no host."""
    text = server.strip()
    shown = redact_text(server)  # messages are printed: never the login
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if _is_ip(bare):  # 127.0.0.1, ::1, [::1]
        return bare, None
    try:
        parts = urlsplit(text if "://" in text else f"http://{text}")  # host, host:port
        url_port = parts.port  # ValueError when not a number in 0-65535
    except ValueError as err:
        raise ValueError(f"{shown!r} is not a valid URL ({err}); expected {SERVER_FORMS}") from None
    if parts.scheme != "http":
        raise ValueError(f"{shown!r}: visdom is reached over http://, not {parts.scheme}://")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"{shown!r} carries a login: set {USERNAME_VAR} and {PASSWORD_VAR} instead"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{shown!r}: give only http://host[:port], without a path")
    host = parts.hostname or ""
    if not (_is_ip(host) or _HOSTNAME.fullmatch(host)):
        raise ValueError(f"{shown!r} names no valid host; expected {SERVER_FORMS}")
    return host, url_port


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
