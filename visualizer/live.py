"""Live mode for the trainer (``--remote False``): follow the run's store in a background thread."""

from __future__ import annotations

import logging
import threading

from .follower import Follower
from .server import VisdomServer, ensure_server
from .visdom_client import VisdomClient

log = logging.getLogger(__name__)


class LiveVisualizer:
    """A follower thread (and the visdom server it started, if any); :meth:`stop` ends both."""

    def __init__(self, follower: Follower, server: VisdomServer | None) -> None:
        self.follower = follower
        self.server = server
        self._thread = threading.Thread(target=self._run, name="visualizer-live", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The visdom page to open."""
        return self.follower.client.url

    def _run(self) -> None:
        try:
            self.follower.run()
        except Exception:  # the training must go on without its plots
            log.exception("the live visualizer stopped")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop following (after a last look at the store) and stop a server we started."""
        self.follower.wake()  # one last poll picks up the final status and points
        self.follower.stop()
        self._thread.join(timeout)
        if self.server is not None:
            self.server.stop()
            self.server = None


def start_live(
    store_dir: str,
    server: str = "127.0.0.1",
    port: int = 8097,
    env: str | None = None,
    **follower_options,
) -> LiveVisualizer:
    """Start visdom if none answers at ``server:port`` and follow ``store_dir`` into it.

    Returns an object whose ``stop()`` ends following and stops the server if
    this call started it. Raises ``VisdomServerError`` when the port is held by
    something that is not visdom.
    """
    started = ensure_server(server, port, start=True)
    client = VisdomClient(server, port)
    follower = Follower(str(store_dir), client, env=env, **follower_options)
    live = LiveVisualizer(follower, started)
    log.info("live plots at %s", live.url)
    return live
