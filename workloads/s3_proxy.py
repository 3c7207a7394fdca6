"""A reverse proxy on loopback in front of an S3 endpoint that counts the requests through it.

A visualizer in another process is pointed at :attr:`CountingProxy.url`; boto3 signs
the Host it talks to, and the proxy passes every header on unchanged, so the
server checks the same signature. What goes through is counted by kind:
``LIST`` (a GET of a bucket with ``list-type``), ``GET``, ``HEAD``, ``PUT``, ...

:meth:`CountingProxy.deny` makes it answer 403 AccessDenied, as a bucket policy
would, for the objects under a prefix (and listings of it) until :meth:`~CountingProxy.allow`.
"""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

# Headers about one connection, not the request: never passed on.
_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade")
)


# What S3 answers a request a bucket policy denies.
_ACCESS_DENIED = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
)


def request_kind(method: str, path: str) -> str:
    """``LIST`` for a bucket listing, else the HTTP method."""
    return "LIST" if method == "GET" and "list-type=" in path else method


def request_key(path: str) -> str:
    """``bucket/key`` a path-style request is for: a listing's is ``bucket/<its prefix>``."""
    parts = urlsplit(path)
    bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
    listed = parse_qs(parts.query).get("prefix")
    return f"{bucket}/{listed[0] if listed else key}"


class CountingProxy:
    """Forward HTTP on ``127.0.0.1:<port>`` to ``upstream`` (``http://host:port``), counting."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.counts: Counter[str] = Counter()
        self.paths: list[str] = []  # every request's path and query, in order
        self._denied: dict[str, bool] = {}  # ``bucket/prefix`` answered 403: listings too?
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    def snapshot(self) -> Counter[str]:
        """The counts so far, by kind."""
        with self._lock:
            return Counter(self.counts)

    def _count(self, kind: str, path: str) -> None:
        with self._lock:
            self.counts[kind] += 1
            self.paths.append(path)

    def paths_since(self, first: int) -> list[str]:
        """The paths asked for since the ``first``-th request (``len(proxy.paths)`` then)."""
        with self._lock:
            return self.paths[first:]

    def deny(self, prefix: str, listings: bool = True) -> None:
        """Answer 403 AccessDenied for the objects under ``bucket/prefix``, and (``listings``)
        for listings of it: a bucket policy denying s3:GetObject (and s3:ListBucket) there."""
        with self._lock:
            self._denied[prefix] = listings

    def allow(self, prefix: str) -> None:
        """Pass on the requests for ``prefix`` again."""
        with self._lock:
            self._denied.pop(prefix, None)

    def denies(self, method: str, path: str) -> bool:
        """Whether the request ``method path`` is answered 403."""
        key, listing = request_key(path), request_kind(method, path) == "LIST"
        with self._lock:
            return any(
                key.startswith(prefix) and (listings or not listing)
                for prefix, listings in self._denied.items()
            )

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as boto3 expects
            # Headers and body go out in two writes: with Nagle's algorithm the body
            # waited for the client's delayed ACK, 40 ms a request (7 ms direct).
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: object) -> None:
                pass  # thousands of lines of nothing new

            def _forward(self) -> None:
                proxy._count(request_kind(self.command, self.path), self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy.denies(self.command, self.path):
                    self._answer(
                        403, "Forbidden", [("Content-Type", "application/xml")], _ACCESS_DENIED
                    )
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                # A new connection a request: keeping one per client connection measured
                # no faster; through it a request took 7-8 ms on loopback, 5-8 ms direct.
                upstream = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                self._answer(answer.status, answer.reason, answer.getheaders(), data)

            def _answer(
                self, status: int, reason: str, headers: list[tuple[str, str]], data: bytes
            ) -> None:
                self.send_response(status, reason)
                for key, value in headers:
                    if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                # A HEAD's answer says the length of the body it leaves out.
                given = {k.lower(): v for k, v in headers}.get("content-length")
                sent_length = given if self.command == "HEAD" else None
                self.send_header("Content-Length", sent_length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            # http.server dispatches on these names.
            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward  # noqa: N815

        return Handler
