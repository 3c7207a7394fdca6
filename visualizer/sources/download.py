"""Each run's scalars as a CSV download, from a small HTTP server on the loopback interface.

visdom serves only its own files, and a ``data:`` link would put the whole CSV
into the page (and into visdom's memory) on every update. So while following,
the visualizer answers ``GET /runs/<run>.csv`` itself, on 127.0.0.1 and a port
the system picks, by running the same export as ``python -m visualizer export``
on that run's store; each run's options pane links there. The runs table links
to the whole sweep: ``/all/points.csv`` (every run's scalars) and ``/all/runs.csv``
(the runs table, a row a run: ``export --kind runs``). With a :attr:`CsvDownloads.render_file`
(the snapshot's), a page is also one self-contained HTML file: ``/one-file/<run>.html``
and ``/one-file/all.html`` (the runs table and the comparison). The link works in a
browser on the machine that runs the visualizer (the usual laptop setup). Like
our visdom, it answers by :func:`visualizer.origin.refusal`: no other page the
browser shows can read the runs (DNS rebinding, cross-origin requests).
"""

from __future__ import annotations

import io
import logging
import shlex
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote

from snapshot_store.format.frames import StoreError
from visualizer.origin import refusal

from .export import export
from .s3 import S3ReadError

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
_PREFIX, _SUFFIX = "/runs/", ".csv"
_OPEN = "/open/"  # the runs table's links: read the run, then go to its page
_ALL = "/all/"  # the whole sweep: /all/<file> -> (export kind, the file's name when saved)
SWEEP_FILES = {"points.csv": ("scalars", "all-runs.csv"), "runs.csv": ("runs", "runs-table.csv")}
_ONE_FILE, _SWEEP_FILE = "/one-file/", "all.html"  # a page as one HTML file (the snapshot)
# A store, or the followed root -> the snapshot file of its runs (python -m visualizer snapshot).
RenderFile = Callable[[str], bytes]
OPEN_WAIT_S = 10.0  # how long a link waits for its run's page to be drawn
# A run's name -> (set once its page is drawn, the page's URL); None: no such run.
OnOpen = Callable[[str], "tuple[threading.Event, str] | None"]


def export_command(store: str, run: str, kind: str = "scalars") -> str:
    """The shell command writing run ``run``'s CSV (or, for a directory of runs, the file
    ``run``.csv of ``kind``) from ``store``, quoted to run as written."""
    csv = shlex.quote(f"{run}{_SUFFIX}")
    kind_option = "" if kind == "scalars" else f" --kind {kind}"
    return f"python -m visualizer export --pickle-dir {shlex.quote(store)}{kind_option} > {csv}"


class CsvDownloads:
    """The loopback server and the runs it offers, by name -> store (a path or s3:// URL)."""

    def __init__(self, s3_client: Any = None) -> None:
        self.stores: dict[str, str] = {}
        self.root: str | None = None  # the root followed: the sweep's downloads
        self.s3_client = s3_client
        self.on_open: OnOpen | None = None  # serves /open/<run> when set
        self.render_file: RenderFile | None = None  # serves /one-file/... when set
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        """Listen on 127.0.0.1 (a free port) in a background thread."""
        downloads = self

        class Handler(BaseHTTPRequestHandler):
            def parse_request(self) -> bool:
                # Here, not in a route: every route and method answers by the one rule.
                return super().parse_request() and downloads.admit(self)

            def do_GET(self) -> None:
                if self.path.startswith(_OPEN):
                    downloads.open_run(self)
                elif self.path.startswith(_ALL):
                    downloads.answer_sweep(self)
                elif self.path.startswith(_ONE_FILE):
                    downloads.answer_one_file(self)
                else:
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

    def offer_sweep(self, root: str) -> tuple[str, str]:
        """Serve the sweep at ``root`` (the followed root) whole; the URLs of every run's
        points and of the runs table."""
        self.root = root
        base = f"http://{HOST}:{self.port}{_ALL}"
        return f"{base}points.csv", f"{base}runs.csv"

    def url(self, run: str) -> str:
        """Where run ``run``'s CSV is downloaded."""
        return f"http://{HOST}:{self.port}{_PREFIX}{quote(run, safe='')}{_SUFFIX}"

    def one_file_url(self, run: str | None = None) -> str | None:
        """Where run ``run``'s page (None: the runs table and the comparison) is one HTML file;
        None when no snapshot is served."""
        if self.render_file is None:
            return None
        name = _SWEEP_FILE if run is None else f"{quote(run, safe='')}.html"
        return f"http://{HOST}:{self.port}{_ONE_FILE}{name}"

    def open_url(self, run: str) -> str:
        """The link that reads run ``run`` and then shows its page (see :attr:`on_open`)."""
        return f"http://{HOST}:{self.port}{_OPEN}{quote(run, safe='')}"

    def open_run(self, request: BaseHTTPRequestHandler) -> None:
        """Have the run named in the path read and drawn, then send the browser to its page."""
        run = unquote(request.path.split("?", 1)[0][len(_OPEN) :])
        opened = self.on_open(run) if self.on_open is not None else None
        if opened is None:
            self._fail(request, HTTPStatus.NOT_FOUND, "no such run is followed here")
            return
        drawn, url = opened
        if not drawn.wait(OPEN_WAIT_S):  # a long history: its page fills in as it is read
            log.info("run %r: still being read; its page fills in as it is", run)
        try:
            request.send_response(HTTPStatus.SEE_OTHER)
            request.send_header("Location", url)
            request.send_header("Content-Length", "0")
            request.end_headers()
        except ConnectionError:
            request.close_connection = True

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
        self._export(request, store, "scalars", f"{run}{_SUFFIX}")

    def answer_sweep(self, request: BaseHTTPRequestHandler) -> None:
        """Send every run's points, or the runs table, of the followed root as CSV."""
        file = SWEEP_FILES.get(request.path.split("?", 1)[0][len(_ALL) :])
        if file is None or self.root is None:
            self._fail(request, HTTPStatus.NOT_FOUND, "no such download here")
            return
        kind, filename = file
        self._export(request, self.root, kind, filename)

    def answer_one_file(self, request: BaseHTTPRequestHandler) -> None:
        """Send a run's page, or the runs table and comparison, as one HTML file (a download:
        the browser opens it from disk, never as a page of this origin)."""
        name = unquote(request.path.split("?", 1)[0][len(_ONE_FILE) :])
        run = name[: -len(".html")] if name.endswith(".html") else None
        source = self.root if name == _SWEEP_FILE else self.stores.get(run or "")
        if source is None or self.render_file is None:
            self._fail(request, HTTPStatus.NOT_FOUND, "no such page is followed here")
            return
        try:
            body = self.render_file(source)
        except Exception as err:  # a store, a bucket, the snapshot's assets: one line, never more
            log.warning("one file %s: can not make it from %s: %s", name, source, err)
            self._fail(request, HTTPStatus.BAD_GATEWAY, f"can not read {source}: {err}")
            return
        filename = "runs.html" if name == _SWEEP_FILE else name
        disposition = f"attachment; filename*=UTF-8''{quote(filename, safe='')}"
        self._send(request, HTTPStatus.OK, "text/html", body, disposition)

    def _export(self, request: BaseHTTPRequestHandler, store: str, kind: str, name: str) -> None:
        """Run the export of ``kind`` on ``store``; send it as the file ``name``."""
        out = io.StringIO()
        try:
            export(store, out, kind, s3_client=self.s3_client)
        except (OSError, S3ReadError, StoreError, ValueError) as err:
            log.warning("download %s: can not read %s: %s", name, store, err)
            self._fail(request, HTTPStatus.BAD_GATEWAY, f"can not read {store}: {err}")
            return
        disposition = f"attachment; filename*=UTF-8''{quote(name, safe='')}"
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
