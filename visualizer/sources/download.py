"""Each run's scalars as a CSV download, from a small HTTP server on the loopback interface.

visdom serves only its own files, and a ``data:`` link would put the whole CSV
into the page (and into visdom's memory) on every update. So while following,
the visualizer answers ``GET /runs/<run>.csv`` itself, on 127.0.0.1 and a port
the system picks, by running the same export as ``python -m visualizer export``
on that run's store; each run's options pane links there. The link works in a
browser on the machine that runs the visualizer (the usual laptop setup). Like
our visdom, it answers by :func:`visualizer.origin.refusal`: no other page the
browser shows can read the runs (DNS rebinding, cross-origin requests).
"""

from __future__ import annotations

import io
import logging
import shlex
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote

from snapshot_store.frames import StoreError
from visualizer.origin import refusal

from .export import export_csv
from .s3 import S3ReadError

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
_PREFIX, _SUFFIX = "/runs/", ".csv"


def export_command(store: str, run: str) -> str:
    """The shell command writing run ``run``'s CSV from ``store``, quoted to run as written."""
    csv = shlex.quote(f"{run}{_SUFFIX}")
    return f"python -m visualizer export --pickle-dir {shlex.quote(store)} > {csv}"


class CsvDownloads:
    """The loopback server and the runs it offers, by name -> store location (path or s3:// URL)."""

    def __init__(self, s3_client: Any = None) -> None:
        self.stores: dict[str, str] = {}
        self.s3_client = s3_client
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        """Listen on 127.0.0.1 (a free port) in a background thread."""
        downloads = self

        class Handler(BaseHTTPRequestHandler):
            def parse_request(self) -> bool:
                # Here, not in a route: every route and method answers by the one rule.
                return super().parse_request() and downloads.admit(self)

            def do_GET(self) -> None:
                downloads.answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("download: %s", format % args)

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, name="csv-downloads", daemon=True
        ).start()
        log.info("CSV downloads at http://%s:%d%s<run>%s", HOST, self.port, _PREFIX, _SUFFIX)

    @property
    def port(self) -> int:
        """The port listened on (after :meth:`start`)."""
        assert self._server is not None, "start() first"
        return self._server.server_address[1]

    def offer(self, run: str, store: str) -> str:
        """Serve run ``run``'s CSV, read from ``store``; its URL."""
        self.stores[run] = store
        return self.url(run)

    def url(self, run: str) -> str:
        """Where run ``run``'s CSV is downloaded."""
        return f"http://{HOST}:{self.port}{_PREFIX}{quote(run, safe='')}{_SUFFIX}"

    def __enter__(self) -> CsvDownloads:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def admit(self, request: BaseHTTPRequestHandler) -> bool:
        """Whether ``request`` comes from our own origin; if not, answer 403 (one line)."""
        host, origin = request.headers.get("Host"), request.headers.get("Origin")
        why = refusal(host, origin, loopback=True)  # it listens on HOST only
        if why is None:
            return True
        log.warning("refused a download for host %r from the page of %r: %s", host, origin, why)
        self._fail(request, HTTPStatus.FORBIDDEN, why)
        return False

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        """Send the CSV of the run named in the request's path, or a one-line error."""
        path = request.path.split("?", 1)[0]
        run = unquote(path[len(_PREFIX) : -len(_SUFFIX)]) if path.startswith(_PREFIX) else ""
        store = self.stores.get(run) if path.endswith(_SUFFIX) else None
        if store is None:
            self._fail(request, HTTPStatus.NOT_FOUND, "no such run is followed here")
            return
        out = io.StringIO()
        try:
            export_csv(store, out, self.s3_client)
        except (OSError, S3ReadError, StoreError, ValueError) as err:
            log.warning("CSV of run %r: can not read %s: %s", run, store, err)
            self._fail(request, HTTPStatus.BAD_GATEWAY, f"can not read {store}: {err}")
            return
        disposition = f"attachment; filename*=UTF-8''{quote(run, safe='')}.csv"
        self._send(request, HTTPStatus.OK, "text/csv", out.getvalue().encode(), disposition)

    def _fail(self, request: BaseHTTPRequestHandler, status: HTTPStatus, message: str) -> None:
        self._send(request, status, "text/plain", (message + "\n").encode())

    @staticmethod
    def _send(
        request: BaseHTTPRequestHandler,
        status: HTTPStatus,
        kind: str,
        body: bytes,
        disposition: str | None = None,
    ) -> None:
        """Answer ``body``; a browser that went away meanwhile (a cancelled download) is no error."""
        try:
            request.send_response(status)
            request.send_header("Content-Type", f"{kind}; charset=utf-8")
            if disposition is not None:
                request.send_header("Content-Disposition", disposition)
            request.send_header("Content-Length", str(len(body)))
            request.end_headers()
            request.wfile.write(body)
            request.wfile.flush()
        except ConnectionError as err:  # BrokenPipeError, ConnectionResetError
            log.debug("download %s: the client closed the connection (%s)", request.path, err)
            request.close_connection = True
