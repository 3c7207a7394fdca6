"""A small visdom HTTP client: JSON messages in, errors that say what went wrong out.

Why not ``visdom.Visdom``: importing the ``visdom`` package imports torch when
it is installed (to recognise tensors), which costs about 3 s and 200 MB
before the first point is drawn, and its client prints tracebacks instead of
raising. The visualizer builds visdom's JSON messages itself anyway, so it
speaks visdom's HTTP endpoints (``/events``, ``/update``, ``/win_exists``,
``/win_data``) directly, including visdom's login.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from typing import Any

import requests

log = logging.getLogger(__name__)

# Environment variables holding visdom's login, as the visdom server reads them.
USERNAME_ENV = "VISDOM_USERNAME"
PASSWORD_ENV = "VISDOM_PASSWORD"


class VisdomUnavailable(ConnectionError):
    """No visdom server answers (not started yet, restarting, or gone)."""


class VisdomRequestError(RuntimeError):
    """The server answered a request with an HTTP error, or refused the login."""


class VisdomClient:
    """Posts messages to one visdom server over a kept-alive HTTP session."""

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
        self._session: requests.Session | None = None
        self.requests = 0  # messages posted: for tests and benchmarks

    @property
    def url(self) -> str:
        """Base URL of the server's page."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _connect(self) -> requests.Session:
        if self._session is None:
            session = requests.Session()
            session.trust_env = (
                False  # a proxy from the environment must not carry loopback traffic
            )
            if self.username:
                # visdom's login: the password travels as its sha256 hex digest.
                digest = hashlib.sha256((self.password or "").encode("utf-8")).hexdigest()
                response = self._send(
                    session, "", {"username": self.username, "password": digest}, as_json=True
                )
                if response.status_code != 200:
                    raise VisdomRequestError(
                        f"visdom at {self.url} refused the login of {self.username!r}"
                    )
            self._session = session
        return self._session

    def _send(
        self, session: requests.Session, endpoint: str, msg: dict[str, Any], as_json: bool = False
    ) -> requests.Response:
        url = f"{self.url}/{endpoint}"
        try:
            if as_json:
                return session.post(url, json=msg, timeout=self.timeout)
            return session.post(url, data=json.dumps(msg), timeout=self.timeout)
        except requests.RequestException as err:
            self._session = None  # a restarted server wants a fresh session (and login)
            raise VisdomUnavailable(
                f"visdom at {self.url} does not answer ({type(err).__name__})"
            ) from None

    def post(self, endpoint: str, msg: dict[str, Any]) -> str:
        """POST ``msg`` as JSON to ``endpoint`` (``events``, ``update``, ...); the reply text."""
        session = self._connect()
        self.requests += 1
        response = self._send(session, endpoint, msg)
        if response.status_code != 200:
            raise VisdomRequestError(
                f"visdom at {self.url} answered /{endpoint} with HTTP {response.status_code}: "
                f"{response.text[:200]}"
            )
        return response.text

    def window_exists(self, env: str, win: str) -> bool:
        """True when window ``win`` is in env ``env`` on the server."""
        return self.post("win_exists", {"win": win, "eid": env}) == "true"

    def window_data(self, env: str, win: str) -> dict[str, Any]:
        """The server's copy of one window (traces under ``content.data``)."""
        return json.loads(self.post("win_data", {"win": win, "eid": env}))

    def env_windows(self, env: str) -> dict[str, Any]:
        """Every window of env ``env``, by id."""
        return json.loads(self.post("win_data", {"win": None, "eid": env}))
