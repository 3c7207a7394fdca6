"""A thin visdom client: JSON messages in, errors that say what went wrong out.

It builds on :class:`visdom.Visdom` (for its endpoints and its login) but adds
a request timeout, raises instead of printing tracebacks, and keeps visdom's
chatty startup warnings out of our log.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import requests
import visdom

log = logging.getLogger(__name__)

# Environment variables holding visdom's login, as the visdom server reads them.
USERNAME_ENV = "VISDOM_USERNAME"
PASSWORD_ENV = "VISDOM_PASSWORD"


class VisdomUnavailable(ConnectionError):
    """No visdom server answers (not started yet, restarting, or gone)."""


class VisdomRequestError(RuntimeError):
    """The server answered a request with an HTTP error."""


class _Visdom(visdom.Visdom):
    request_timeout = 10.0

    def _handle_post(self, url: str, data: Any = None) -> str:
        try:
            response = self.session.post(url, data=data or {}, timeout=self.request_timeout)
        except requests.RequestException as err:
            raise VisdomUnavailable(f"visdom at {self.server}:{self.port} does not answer ({err})") from None
        if response.status_code != 200:
            raise VisdomRequestError(
                f"visdom answered {url} with HTTP {response.status_code}: {response.text[:200]}"
            )
        return response.text


class VisdomClient:
    """Posts messages to one visdom server; connects lazily and reconnects after errors."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8097,
        username: str | None = None,
        password: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.username = username if username is not None else os.environ.get(USERNAME_ENV) or None
        self.password = password if password is not None else os.environ.get(PASSWORD_ENV) or None
        self._viz: _Visdom | None = None
        self.requests = 0  # messages posted: for tests and benchmarks

    @property
    def url(self) -> str:
        """Base URL of the server's page."""
        return f"http://{self.host}:{self.port}"

    def _connect(self) -> _Visdom:
        if self._viz is None:
            # visdom logs setup chatter as warnings ("Setting up a new session",
            # "Without the incoming socket ..."): not news to our users.
            logging.getLogger("visdom").setLevel(logging.ERROR)
            _Visdom.request_timeout = self.timeout
            try:
                self._viz = _Visdom(
                    server=f"http://{self.host}",
                    port=self.port,
                    raise_exceptions=True,
                    use_incoming_socket=False,
                    username=self.username,
                    password=self.password,
                )
            except RuntimeError as err:  # visdom's "Authentication failed"
                raise VisdomRequestError(f"visdom at {self.url} refused the login: {err}") from None
        return self._viz

    def post(self, endpoint: str, msg: dict[str, Any]) -> str:
        """POST ``msg`` as JSON to ``endpoint`` (``events``, ``update``, ...); the reply text."""
        viz = self._connect()
        self.requests += 1
        try:
            return viz._handle_post(f"{viz.server}:{viz.port}{viz.base_url}/{endpoint}", json.dumps(msg))
        except VisdomUnavailable:
            self._viz = None  # a restarted server wants a fresh session (and login)
            raise

    def window_exists(self, env: str, win: str) -> bool:
        """True when window ``win`` is in env ``env`` on the server."""
        return self.post("win_exists", {"win": win, "eid": env}) == "true"

    def window_data(self, env: str, win: str) -> dict[str, Any]:
        """The server's copy of one window (traces under ``content.data``)."""
        return json.loads(self.post("win_data", {"win": win, "eid": env}))
