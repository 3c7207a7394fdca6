"""A small visdom HTTP client: JSON messages in, errors that say what went wrong out.

Why not ``visdom.Visdom``: importing the ``visdom`` package imports torch when
it is installed (to recognise tensors), which delays the first point and costs
memory, and its client prints tracebacks instead of raising. The visualizer
builds visdom's JSON messages itself anyway, so it speaks visdom's HTTP routes
(``/events``, ``/update``, ``/win_exists``, ``/win_data``) directly, including
visdom's login.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import requests

from .endpoint import VisdomEndpoint

log = logging.getLogger(__name__)


class VisdomUnavailableError(ConnectionError):
    """No visdom server answers (not started yet, restarting, or gone)."""


class VisdomRequestError(RuntimeError):
    """The server answered a request with an HTTP error, or refused the login."""


class VisdomClient:
    """Posts messages to one visdom server over a kept-alive HTTP session, logging in if it has a login."""

    def __init__(self, endpoint: VisdomEndpoint, timeout: float = 10.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._session: requests.Session | None = None

    @property
    def url(self) -> str:
        """Base URL of the server's page."""
        return self.endpoint.url

    def _connect(self) -> requests.Session:
        if self._session is None:
            session = requests.Session()
            # A proxy from the environment must not carry loopback traffic.
            session.trust_env = False
            username = self.endpoint.username
            if username:
                # visdom's login: the password travels as its sha256 hex digest.
                digest = hashlib.sha256((self.endpoint.password or "").encode("utf-8")).hexdigest()
                response = self._send(
                    session, "", {"username": username, "password": digest}, as_json=True
                )
                if response.status_code != 200:
                    raise VisdomRequestError(
                        f"visdom at {self.url} refused the login of {username!r}"
                    )
            self._session = session
        return self._session

    def _send(
        self, session: requests.Session, route: str, msg: dict[str, Any], as_json: bool = False
    ) -> requests.Response:
        url = f"{self.url}/{route}"
        try:
            if as_json:
                return session.post(url, json=msg, timeout=self.timeout)
            return session.post(url, data=json.dumps(msg), timeout=self.timeout)
        except requests.RequestException as err:
            self._session = None  # a restarted server wants a fresh session (and login)
            raise VisdomUnavailableError(
                f"visdom at {self.url} does not answer ({type(err).__name__})"
            ) from None

    def post(self, route: str, msg: dict[str, Any]) -> str:
        """POST ``msg`` as JSON to ``route`` (``events``, ``update``, ...); the reply text."""
        session = self._connect()
        response = self._send(session, route, msg)
        if response.status_code != 200:
            raise VisdomRequestError(
                f"visdom at {self.url} answered /{route} with HTTP {response.status_code}: "
                f"{response.text[:200]}"
            )
        return response.text

    def window_exists(self, env: str, win: str) -> bool:
        """True when window ``win`` is in env ``env`` on the server."""
        return self.post("win_exists", {"win": win, "eid": env}) == "true"

    def window_data(self, env: str, win: str) -> dict[str, Any]:
        """The server's copy of one window (traces under ``content.data``)."""
        data: dict[str, Any] = json.loads(self.post("win_data", {"win": win, "eid": env}))
        return data
