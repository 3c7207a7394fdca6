"""Fixtures of the server tests: an HTTP server that is not visdom."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from tests.fixtures.servers.net import serving
from visualizer.server.endpoint import VisdomEndpoint


class _NotVisdom(BaseHTTPRequestHandler):
    """An HTTP server that answers everything with a page that is not visdom."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        body = b"<html><head><title>something else</title></head><body>[]</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean


@pytest.fixture
def plain_http() -> Iterator[VisdomEndpoint]:
    """A loopback endpoint held by a plain HTTP server that is not visdom."""
    with serving(_NotVisdom) as httpd:
        yield VisdomEndpoint("127.0.0.1", httpd.server_address[1])
