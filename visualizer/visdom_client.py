"""A small visdom HTTP client: JSON messages in, errors that say what went wrong out.

:class:`VisdomEvents` listens for what people do on the page (visdom forwards
the events of its properties panes to listening clients), on visdom's
``/vis_socket`` websocket.

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
import math
import queue
import re
import socket as sockets
import threading
import time
from collections.abc import Callable
from typing import Any

import requests

from visualizer.markup import plot_strings
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.watched import PAGES_COMMAND

log = logging.getLogger(__name__)

# The routes whose messages draw windows on the page.
_DRAWING_ROUTES = frozenset({"events", "update"})


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
        self._events: VisdomEvents | None = None
        self._envs: set[str] = set()  # every env on the server at _envs_at
        self._envs_at = -math.inf

    @property
    def events(self) -> VisdomEvents:
        """The listener for this server's page events (started by its first subscriber)."""
        if self._events is None:
            # Its own client: a requests session is not to be shared between threads.
            self._events = VisdomEvents(VisdomClient(self.endpoint, self.timeout))
        return self._events

    def close(self) -> None:
        """Stop listening for page events, if anything listened."""
        if self._events is not None:
            self._events.stop()

    @property
    def url(self) -> str:
        """Base URL of the server's page."""
        return self.endpoint.url

    def cookie_header(self) -> list[str]:
        """The headers a websocket to the server needs: its login's cookie, if it has a login."""
        session = self._connect()
        cookies = "; ".join(f"{c.name}={c.value}" for c in session.cookies)
        return [f"Cookie: {cookies}"] if cookies else []

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
        """POST ``msg`` as JSON to ``route`` (``events``, ``update``, ...); the reply text.

        A window's strings Plotly would read as markup go out escaped (:mod:`.markup`).
        """
        session = self._connect()
        if route in _DRAWING_ROUTES:
            msg = plot_strings(msg)
        response = self._send(session, route, msg)
        if response.status_code != 200:
            raise VisdomRequestError(
                f"visdom at {self.url} answered /{route} with HTTP {response.status_code}: "
                f"{response.text[:200]}"
            )
        self._note_env(route, msg)
        return response.text

    def _note_env(self, route: str, msg: dict[str, Any]) -> None:
        """Keep the env listing true to what this client did since it was taken: a window drawn
        creates its env, a deleted env is gone. A listing taken a moment before a new env's
        first draw, trusted for that env, had half of 200 runs opened quickly rebuilt."""
        env = msg.get("eid")
        if not isinstance(env, str):
            return
        if route in _DRAWING_ROUTES:
            self._envs.add(env)
        elif route == "delete_env":
            self._envs.discard(env)

    def env_listed(self, env: str, now: float, max_age: float, not_before: float) -> bool:
        """Whether ``env`` is on the server, from one listing of every env.

        The listing serves every caller for ``max_age`` seconds (a hundred idle
        runs cost one request, not a hundred), unless it was taken before
        ``not_before`` (when the caller created its env).
        """
        if now - self._envs_at >= max_age or self._envs_at < not_before:
            self._envs = set(json.loads(self.post("env_state", {})))
            self._envs_at = now
        return env in self._envs

    def window_exists(self, env: str, win: str) -> bool:
        """True when window ``win`` is in env ``env`` on the server."""
        return self.post("win_exists", {"win": win, "eid": env}) == "true"

    def window_data(self, env: str, win: str) -> dict[str, Any]:
        """The server's copy of one window (traces under ``content.data``)."""
        data: dict[str, Any] = json.loads(self.post("win_data", {"win": win, "eid": env}))
        return data


EventQueue = queue.SimpleQueue[dict[str, Any]]


class VisdomEvents:
    """Page events (a properties pane edited, a window closed) for the windows subscribed to.

    visdom sends every pane event to each client on its ``/vis_socket`` websocket
    (what visdom's own client listens on). A background thread holds one open and
    files each event under its (env, window) as it comes: a viewer left idle sends
    nothing and is sent nothing (asking visdom's HTTP version of the socket,
    ``/vis_socket_wrap``, once a second was most of an idle viewer's CPU, on both
    sides). A closed socket (a restarted server) is opened again. Subscribers renew
    their interest by subscribing again at each sync; a thread nobody renewed for
    ``IDLE_STOP_S`` (a one-off draw) ends, and the next subscriber starts another.
    """

    # Longer than the follow loop's longest quiet pause, when it renews its subscriptions
    # (an idle S3 run is polled once a minute, DEFAULT_MAX_IDLE_INTERVAL): at 10 s the
    # listener was down most of such a minute, and a page's zoom on a quiet run was lost.
    IDLE_STOP_S = 180.0
    CHECK_S = 1.0  # how often a quiet socket's thread looks whether to stop

    def __init__(self, client: VisdomClient) -> None:
        self.client = client
        self.on_event: Callable[[], None] | None = None  # called after events were filed
        self._queues: dict[tuple[str, str], EventQueue] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._open: Any = None  # the socket listened on: stop() shuts it, so its read ends now
        self._renewed = 0.0
        self._pages: frozenset[str] | None = None

    @property
    def pages(self) -> frozenset[str] | None:
        """The envs open pages show, as the server last told; None while it tells nothing (not
        listening, or a server without :mod:`visualizer.server.watched`): any env may be open."""
        return self._pages

    def subscribe(self, env: str, win: str) -> EventQueue:
        """The queue that receives window ``win`` of env ``env``'s events; starts listening."""
        with self._lock:
            self._renewed = time.monotonic()
            events = self._queues.setdefault((env, win), queue.SimpleQueue())
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="visdom-events", daemon=True)
                self._thread.start()
        return events

    def stop(self) -> None:
        """Stop listening (idempotent), at once: a read waiting on a quiet socket (CHECK_S) made
        a viewer's exit wait for it, 0.7 s of 1.5."""
        self._stop.set()
        with self._lock:
            thread, self._thread, open_socket = self._thread, None, self._open
        if open_socket is not None and open_socket.sock is not None:
            try:
                open_socket.sock.shutdown(sockets.SHUT_RDWR)
            except OSError:
                pass  # closed already
        if thread is not None:
            thread.join(timeout=5)

    def _idle(self) -> bool:
        """True (and the thread forgotten) when no subscriber renewed for IDLE_STOP_S."""
        with self._lock:
            if time.monotonic() - self._renewed < self.IDLE_STOP_S:
                return False
            self._thread = None
            return True

    def _done(self) -> bool:
        """Whether this thread is to end: stopped, or idle (a subscriber after that starts
        another thread, so one told it is idle never listens again)."""
        current = self._thread is threading.current_thread()
        return self._stop.is_set() or not current or self._idle()

    def _run(self) -> None:
        import websocket  # visdom's own dependency; here, the listener's only

        while not self._done():
            try:
                socket = websocket.create_connection(
                    re.sub("^http", "ws", self.client.url) + "/vis_socket",
                    timeout=self.client.timeout,  # a loaded server's handshake may be slow
                    header=self.client.cookie_header(),
                )
                socket.settimeout(self.CHECK_S)
            except (OSError, websocket.WebSocketException, VisdomUnavailableError,
                    VisdomRequestError) as err:  # fmt: skip
                log.debug("page events: %s", err)  # the follow loop reports a server down
                self._stop.wait(1.0)
                continue
            with self._lock:
                self._open = socket
            try:
                if not self._stop.is_set():  # stopped while it opened: stop() saw no socket
                    self._listen(socket, websocket)
            finally:
                with self._lock:
                    self._open, self._pages = None, None  # told again by the next socket
                socket.close()
            self._stop.wait(1.0)  # closed: a restarting server, or a login it refused

    def _listen(self, socket: Any, websocket: Any) -> None:
        """File what visdom sends until the socket closes or the listener is done."""
        while not self._done():
            try:
                text = socket.recv()
            except websocket.WebSocketTimeoutException:
                continue  # quiet: look whether to stop, and wait again
            except (OSError, websocket.WebSocketException) as err:
                log.debug("page events: %s", err)  # a restarted server: open another
                return
            if not text:
                return  # closed by the server
            if self._file([text]) and self.on_event:
                self.on_event()

    def _file(self, messages: Any) -> bool:
        filed = False
        for text in messages:
            try:
                event = json.loads(text) if isinstance(text, str) else text
            except (ValueError, RecursionError):  # a page's JSON nested past Python's stack
                continue
            if not isinstance(event, dict):
                continue
            if event.get("command") == PAGES_COMMAND:
                filed |= self._told_pages(event.get("envs"))
                continue
            eid, target = event.get("eid"), event.get("target")
            if not (isinstance(eid, str) and isinstance(target, str)):
                continue  # visdom's "alive" greeting and the like; no window is named so
            with self._lock:
                events = self._queues.get((eid, target))
            if events is not None:
                events.put(event)
                filed = True
        return filed

    def _told_pages(self, envs: object) -> bool:
        """Keep the envs the server says open pages show; True when that changed."""
        if not (isinstance(envs, list) and all(isinstance(e, str) for e in envs)):
            return False  # not the server's message: what was known stays
        pages = frozenset(envs)
        with self._lock:
            changed, self._pages = pages != self._pages, pages
        return changed
