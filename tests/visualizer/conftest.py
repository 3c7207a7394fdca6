"""Helpers for the visualizer tests: a visdom reader, a background follower, a counting client,
waiting, and a loopback npm registry."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from visualizer.follower import Follower
from visualizer.server.client import VisdomClient
from visualizer.server.endpoint import VisdomEndpoint


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            result = predicate()
            if result:
                return result
        except Exception as err:  # the window may not exist yet
            last_error = err
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last error: {last_error!r})")


class VisdomReader:
    """Reads windows back through visdom's own client (``Visdom.get_window_data``)."""

    def __init__(self, endpoint: VisdomEndpoint) -> None:
        import visdom  # the reference client; slow to import (it imports torch), so only here

        logging.getLogger("visdom").setLevel(logging.ERROR)  # its socket-less setup chatter
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.viz = visdom.Visdom(
                server=f"http://{endpoint.host}",
                port=endpoint.port,
                use_incoming_socket=False,
                raise_exceptions=True,
            )

    def traces(self, env: str, win: str) -> dict[str, tuple[list, list]]:
        """Trace name -> (x, y) of a plot window's raw traces (smoothed ones left out)."""
        data = json.loads(self.viz.get_window_data(win, env))
        return {
            t["name"]: (t["x"], t["y"])
            for t in data["content"]["data"]
            if t.get("meta") != "smoothed"
        }

    def windows(self, env: str) -> dict[str, Any]:
        """Window id -> window JSON for every window of ``env``."""
        return json.loads(self.viz.get_window_data(None, env))

    def has_window(self, env: str, win: str) -> bool:
        """True when ``win`` exists in ``env``."""
        return bool(self.viz.win_exists(win, env))

    def envs(self) -> list[str]:
        """Env names on the server."""
        return self.viz.get_env_list()


class CountingClient(VisdomClient):
    """A VisdomClient that counts the messages it posts."""

    def __init__(self, endpoint: VisdomEndpoint) -> None:
        super().__init__(endpoint)
        self.posts = 0
        self.routes: Counter[str] = Counter()

    def post(self, route: str, msg: dict[str, Any]) -> str:
        self.posts += 1
        self.routes[route] += 1
        return super().post(route, msg)


@pytest.fixture(scope="session")
def reader(visdom_server) -> VisdomReader:
    """Reads back the session visdom server's windows."""
    return VisdomReader(visdom_server.endpoint)


@pytest.fixture
def run_name() -> str:
    """A run name no other test uses, so envs on the shared server never collide."""
    return f"run-{uuid.uuid4().hex[:8]}"


@contextmanager
def following(
    pickle_dir, endpoint: VisdomEndpoint, client: VisdomClient | None = None, **options: Any
) -> Iterator[Follower]:
    """A Follower running in a background thread until the block ends."""
    options.setdefault("poll_interval", 0.2)
    follower = Follower(str(pickle_dir), client or VisdomClient(endpoint), **options)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            follower.run()
        except BaseException as err:  # surfaced in the test thread
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield follower
    finally:
        follower.stop()
        thread.join(15)
    assert not thread.is_alive(), "follower did not stop"
    if errors:
        raise errors[0]


class Registry:
    """A loopback stand-in for the npm registry: a version's document, and its tarball.

    ``packages``: ``name@version`` -> (tarball bytes, the integrity published for them).
    """

    def __init__(self) -> None:
        self.packages: dict[str, tuple[bytes, str]] = {}
        self.requests: list[str] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                body = registry.answer(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def answer(self, path: str) -> bytes | None:
        name, _, rest = path.lstrip("/").partition("/")
        if rest.startswith(f"-/{name}-") and rest.endswith(".tgz"):  # the tarball
            version = rest.removeprefix(f"-/{name}-").removesuffix(".tgz")
            return self.packages.get(f"{name}@{version}", (None, ""))[0]
        if f"{name}@{rest}" not in self.packages:
            return None
        _, integrity = self.packages[f"{name}@{rest}"]
        dist = {"tarball": f"{self.url}{name}/-/{name}-{rest}.tgz", "integrity": integrity}
        return json.dumps({"name": name, "version": rest, "dist": dist}).encode()


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    """A :class:`Registry` serving in a thread, and ``npm_config_registry`` pointing at it."""
    registry = Registry()
    thread = threading.Thread(target=registry.server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("npm_config_registry", registry.url)
    yield registry
    registry.server.shutdown()
    registry.server.server_close()
    thread.join(5)
