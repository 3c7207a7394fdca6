"""A broken or hostile S3 endpoint's listings are data with a budget: a listing that would go on
for ever ends, with a warning, and entries no S3 sends are left out; the runs listed are found.

The endpoint is a loopback HTTP server answering every request with one ListObjectsV2 page.
"""

from __future__ import annotations

import http.server
import logging
import threading
from collections.abc import Callable, Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from visualizer.sources import s3
from visualizer.sources.s3 import S3Source, make_read_client
from visualizer.sources.s3_runs import S3Runs

PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
<Name>b</Name><Prefix>{prefix}</Prefix><MaxKeys>1000</MaxKeys>{more}
<Contents><Size>3</Size></Contents>
<Contents><Key>{prefix}no-size</Key></Contents>
<Contents><Key>{prefix}file-{n}.txt</Key><Size>7</Size><ETag>"e"</ETag></Contents>
<CommonPrefixes></CommonPrefixes>
<CommonPrefixes><Prefix>{prefix}run-{n}/</Prefix></CommonPrefixes>
</ListBucketResult>"""


@pytest.fixture
def endpoint(monkeypatch) -> Iterator[Callable[[str], list[str]]]:
    """Serves pages: ``endpoint(mode)`` sets what the next pages say ('same token': truncated,
    with one token again and again; 'new tokens': truncated with a new token each time; 'end':
    the last page); returns the request paths served so far."""
    asked: list[str] = []
    mode = ["end"]

    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            n = len(asked)
            prefix = parse_qs(urlsplit(self.path).query)["prefix"][0]
            more = {
                "same token": "<IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken>",
                "new tokens": f"<IsTruncated>true</IsTruncated><NextContinuationToken>t{n}</NextContinuationToken>",
                "end": "<IsTruncated>false</IsTruncated>",
            }[mode[0]]
            body = PAGE.format(prefix=prefix, more=more, n=n).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_port}")
    for name, value in (("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    def serve(new_mode: str) -> list[str]:
        mode[0] = new_mode
        return asked

    yield serve
    server.shutdown()
    server.server_close()


def test_entries_no_s3_sends_are_left_out_and_the_run_is_found(endpoint):
    endpoint("end")
    found = S3Runs("s3://b/runs/", make_read_client()).found()
    assert [f.folder for f in found] == ["run-1"]
    listed = S3Source("s3://b/runs/a/pickle/", make_read_client()).list()
    assert listed == {"file-2.txt": (7, '"e"')}, "no key, no size: left out"


@pytest.mark.parametrize("mode", ["same token", "new tokens"])
def test_a_listing_that_would_go_on_for_ever_ends_with_a_warning(
    endpoint, mode, monkeypatch, caplog
):
    monkeypatch.setattr(s3, "MAX_LIST_PAGES", 5)
    monkeypatch.setattr(s3, "_CUT", set())
    asked = endpoint(mode)
    found = S3Runs("s3://b/runs/", make_read_client()).found()
    assert len(asked) == (2 if mode == "same token" else 5)
    assert [f.folder for f in found] == [f"run-{n}" for n in range(1, len(asked) + 1)]
    why = (
        "stopped: the endpoint sent a continuation token again"
        if mode == "same token"
        else "stopped after 5 pages (5,000 keys)"
    )
    warned = [r.message for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [f"listing s3://b/runs/: {why}; the rest is not looked at"]
    S3Runs("s3://b/runs/", make_read_client()).found()
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1, "told once"
    asked.clear()
    S3Source("s3://b/runs/a/pickle/", make_read_client()).list()
    assert 0 < len(asked) <= 5, "a run's own listing has the same budget"
