"""Each run's CSV from the visualizer's loopback server: the same bytes as `visualizer export`."""

from __future__ import annotations

import io
import logging
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from snapshot_store import Recorder
from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.net import http_get
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from visualizer.layout import safe_id
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.sources.download import HOST, CsvDownloads, export_command
from visualizer.sources.export import export_csv

pytestmark = pytest.mark.integration  # starts an HTTP server


def test_the_options_pane_links_to_the_runs_csv_which_matches_export(
    tmp_path, visdom_server, reader, run_name
):
    store = tmp_path / "a run" / "pickle"
    with Recorder(store, options={"lr": 0.1}, flush_interval=0.05) as rec:
        for step in range(30):
            rec.log({"loss": 1 / (step + 1)}, step=step)
            rec.log({"accuracy": step / 30}, step=step, group="val")
    with (
        CsvDownloads() as downloads,
        following(store, visdom_server.endpoint, env=run_name, downloads=downloads),
    ):
        url = downloads.url("a run")
        assert url.endswith("/runs/a%20run.csv")
        wait_until(lambda: url in reader.windows(run_name)["options"]["content"])
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.headers["Content-Type"].startswith("text/csv")
            assert "attachment" in answer.headers["Content-Disposition"]
            body = answer.read().decode()
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(downloads.url("other"), timeout=10)
    expected = io.StringIO()
    export_csv(str(store), expected)
    assert body == expected.getvalue() and body.count("\n") == 61


def test_without_the_server_the_pane_shows_the_export_command(
    tmp_path, visdom_server, reader, run_name
):
    from visualizer.follower import Follower
    from visualizer.visdom_client import VisdomClient

    store = tmp_path / run_name / "pickle"
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()
    pane = reader.windows(run_name)["options"]["content"]
    assert f"python -m visualizer export --pickle-dir {store}" in pane


def test_s3_runs_with_keys_as_s3_allows_them_are_followed_and_downloaded(
    tmp_path, s3_bucket, visdom_server, reader, run_name
):
    from tests.visualizer.sources.test_s3 import upload

    runs = {"run #1?v=2": 1.0, "läuft 2": 3.0}  # '#', '?', spaces and unicode: legal in keys
    for name, scale in runs.items():
        store = tmp_path / name / "pickle"
        with Recorder(store, flush_interval=0.05) as rec:
            for step in range(10):
                rec.log({"loss": scale * step}, step=step)
        upload(s3_bucket, store, f"{run_name}/my sweep #3/{name}/pickle/")
    prefix = s3_bucket.uri(f"{run_name}/my sweep #3/")
    with (
        CsvDownloads() as downloads,
        following(prefix, visdom_server.endpoint, env=run_name, downloads=downloads),
    ):
        compare = f"{run_name}_compare"
        wait_until(lambda: set(reader.traces(compare, "compare_train_loss")) == set(runs))
        with urllib.request.urlopen(downloads.url("run #1?v=2"), timeout=10) as answer:
            body = answer.read().decode()
    expected = io.StringIO()
    export_csv(f"{prefix}run #1?v=2/pickle", expected)
    assert body == expected.getvalue() and body.count("\n") == 11
    assert body.splitlines()[1].startswith("run #1?v=2,train,train/loss,0,")


def test_a_store_that_can_not_be_read_answers_one_line_not_a_traceback(capfd):
    with CsvDownloads() as downloads:
        downloads.stores["gone"] = "s3://not a bucket/run/pickle/"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(downloads.url("gone"), timeout=10)
        assert err.value.code == 502
        assert "'not a bucket' is not a bucket name" in err.value.read().decode()
    assert "Traceback" not in capfd.readouterr().err


def test_a_download_closed_early_is_a_debug_line(tmp_path, capfd, caplog):
    store = tmp_path / "long" / "pickle"
    with Recorder(store, flush_interval=1.0) as rec:
        for step in range(60_000):  # a CSV of some MB: more than the sockets hold
            rec.log_scalar("loss", 1.0 / (step + 1), step)
    caplog.set_level(logging.DEBUG, logger="visualizer.sources.download")
    with CsvDownloads() as downloads:
        downloads.stores["long"] = str(store)
        with socket.create_connection((HOST, downloads.port), timeout=10) as browser:
            browser.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            browser.sendall(f"GET {urlsplit(downloads.url('long')).path} HTTP/1.1\r\n\r\n".encode())
            assert browser.recv(64).startswith(b"HTTP/1.0 200")
            # closed with the body unread: the server's write fails mid-way
        wait_until(lambda: "closed the connection" in caplog.text)
    assert "Traceback" not in capfd.readouterr().err
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_the_export_command_the_pane_shows_runs_as_written(tmp_path):
    name = "run #1 'b'?"  # shell-special characters, legal in a run's name and an S3 key
    store = tmp_path / "my runs" / name / "pickle"
    with Recorder(store) as rec:
        for step in range(3):
            rec.log({"loss": 1.0}, step=step)
    bin_dir = Path(sys.executable).parent  # `python` is this interpreter, as in a venv
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    command = export_command(str(store), name)
    subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, check=True, timeout=60)
    assert (tmp_path / f"{name}.csv").read_text().count("\n") == 4


def _get(downloads: CsvDownloads, run: str, headers: dict) -> tuple[int, str]:
    return http_get(downloads.url(run), headers)[:2]


def test_only_the_machines_own_pages_read_a_run(tmp_path, caplog):
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1."""
    store = tmp_path / "secret" / "pickle"
    with Recorder(store) as rec:
        rec.log({"loss": 0.25}, step=0)
    with CsvDownloads() as downloads:
        downloads.stores["secret"] = str(store)
        own, port = f"127.0.0.1:{downloads.port}", downloads.port
        for refused in (
            {"Host": f"evil.example:{port}"},
            {"Host": "evil.example"},
            {"Host": own, "Origin": "http://evil.example"},
            {"Host": own, "Origin": f"http://127.0.0.1:{port + 1}"},  # another local server's page
            {"Host": own, "Origin": "null"},  # a sandboxed frame, a file:// page
        ):
            status, body = _get(downloads, "secret", refused)
            assert (status, body.count("\n")) == (403, 1) and "0.25" not in body, refused
        for host in (own, f"localhost:{port}"):
            status, body = _get(downloads, "secret", {"Host": host})
            assert status == 200 and "secret,train,train/loss,0," in body
        assert _get(downloads, "secret", {"Host": own, "Origin": f"http://{own}"})[0] == 200
    assert "refused a download for host 'evil.example'" in caplog.text


def test_an_unknown_run_is_a_404_that_echoes_nothing_asked():
    with CsvDownloads() as downloads:
        own = {"Host": f"127.0.0.1:{downloads.port}"}
        status, body = _get(downloads, "<script>alert(1)</script>", own)
    assert status == 404 and body == "no such run is followed here\n"


@contextmanager
def _linked(
    root: Path, visdom_server: Any, env: str, runs: int, compare: int
) -> Iterator[tuple[CsvDownloads, Any]]:
    """A follower of the ``runs`` runs under ``root``, ``compare`` of them compared, its links
    through a loopback server: once every run is known and the compared ones followed."""
    with (
        CsvDownloads() as downloads,
        following(root, visdom_server.endpoint, env=env, compare=compare,
                  downloads=downloads) as follower,
    ):  # fmt: skip
        wait_until(lambda: len(follower.known) == runs and len(follower.feeds) == compare)
        yield downloads, follower


def test_a_table_link_has_its_run_read_then_sends_the_browser_to_its_page(
    tmp_path, visdom_server, reader, run_name
):
    names = write_small_runs(tmp_path / run_name, 3)
    with _linked(tmp_path / run_name, visdom_server, run_name, runs=3, compare=1) as (
        downloads,
        follower,
    ):
        own = {"Host": f"127.0.0.1:{downloads.port}"}
        unfollowed = sorted(set(names) - set(follower.feeds))
        refused, opened = unfollowed
        status, body, _ = http_get(downloads.open_url("<script>alert(1)</script>"), own)
        assert (status, body) == (404, "no such run is followed here\n")
        status, body, _ = http_get(downloads.open_url(refused), {"Host": "evil.example"})
        assert (status, body.count("\n")) == (403, 1), body
        status, body, location = http_get(downloads.open_url(opened), own)
        env = follower.env_of(opened)
        assert (status, location) == (303, visdom_server.endpoint.env_url(env)), body
        assert opened in follower.feeds
        assert reader.windows(env), "the run is drawn before the browser is sent there"
        # Opened after the refused one: had that been asked for, it would be followed now too.
        assert refused not in follower.feeds


def test_among_many_runs_a_compared_runs_own_page_is_drawn_once_the_page_opens_it(
    tmp_path, visdom_server, reader, run_name
):
    """A hundred compared runs' own pages kept visdom from sending the comparison's windows to
    the page a person opened first: among many runs, each is drawn once its link is followed."""
    write_small_runs(tmp_path / run_name, 4)
    with _linked(tmp_path / run_name, visdom_server, run_name, runs=4, compare=2) as (
        downloads,
        follower,
    ):
        own = {"Host": f"127.0.0.1:{downloads.port}"}
        compare = follower.screen.compare
        assert compare is not None
        wait_until(lambda: len(compare.links) == 2 and reader.windows(compare.env), timeout=30)
        opened, other = sorted(follower.feeds)
        assert compare.links[opened] == downloads.open_url(opened), "the link has it drawn"
        assert follower.env_of(opened) not in reader.envs()
        status, body, location = http_get(compare.links[opened], own)
        env = follower.env_of(opened)
        assert (status, location) == (303, visdom_server.endpoint.env_url(env)), body
        assert reader.windows(env), "the run is drawn before the browser is sent there"
        wait_until(lambda: compare.links[opened] == visdom_server.endpoint.env_url(env))
        assert follower.env_of(other) not in reader.envs(), "a compared run not opened"


def test_the_runs_table_links_the_whole_sweep_as_export_writes_it(
    tmp_path, visdom_server, reader, run_name
):
    from visualizer.sources.export import export

    root = tmp_path / run_name
    write_small_runs(root, 3)
    with (
        CsvDownloads() as downloads,
        following(root, visdom_server.endpoint, env=run_name, compare=1, downloads=downloads),
    ):
        points, table = downloads.offer_sweep(str(root))
        pane = f"runs_{safe_id(str(root))}"
        wait_until(lambda: table in reader.windows(INDEX_ENV).get(pane, {}).get("content", ""))
        assert points in reader.windows(INDEX_ENV)[pane]["content"]
        own = {"Host": f"127.0.0.1:{downloads.port}"}
        bodies = {url: http_get(url, own)[:2] for url in (points, table)}
        for refused in ({"Host": "evil.example"}, {**own, "Origin": "http://evil.example"}):
            status, body, _ = http_get(table, refused)
            assert (status, body.count("\n")) == (403, 1), refused
        status, body, _ = http_get(points.replace("points.csv", "secrets.csv"), own)
        assert (status, body) == (404, "no such download here\n")
    for url, kind in ((points, "scalars"), (table, "runs")):
        expected = io.StringIO()
        export(str(root), expected, kind)
        assert bodies[url] == (200, expected.getvalue()), kind
    assert bodies[table][1].count("\n") == 4  # the header and a row a run


def test_without_a_followed_location_the_sweep_is_a_404():
    with CsvDownloads() as downloads:
        own = {"Host": f"127.0.0.1:{downloads.port}"}
        url = f"http://127.0.0.1:{downloads.port}/all/runs.csv"
        assert http_get(url, own)[:2] == (404, "no such download here\n")


def test_a_page_as_one_file_is_the_snapshot_of_its_runs(tmp_path, capfd):
    """The run page's and the runs table's "as one file" links: the snapshot, as a download."""
    from visualizer.cli import _one_file
    from visualizer.panes.screen import download_link, sweep_links

    root = tmp_path / "runs"
    write_small_runs(root, 2)
    with CsvDownloads() as downloads:
        assert downloads.one_file_url("run-0000") is None, "no snapshot served: no link"
        downloads.render_file = _one_file
        assert "this page as one file" in download_link(downloads, "run-0000", str(root))
        assert "as one file" in sweep_links(downloads, str(root))
        with urllib.request.urlopen(downloads.one_file_url("run-0000"), timeout=60) as answer:
            page = answer.read().decode()
            assert answer.headers["Content-Type"].startswith("text/html")
            assert answer.headers["Content-Disposition"].startswith("attachment;")
        assert "Content-Security-Policy" in page and '"run-0000"' in page
        with urllib.request.urlopen(downloads.one_file_url(), timeout=60) as answer:
            assert '"run-0001"' in answer.read().decode()
        status, body, _ = http_get(downloads.one_file_url("no-such-run"))
        assert (status, body) == (404, "no such page is followed here\n")

        def fails(source: str) -> bytes:
            raise RuntimeError("plotly.js is missing")

        downloads.render_file = fails
        status, body, _ = http_get(downloads.one_file_url("run-0000"))
        assert status == 502 and body.endswith("plotly.js is missing\n") and body.count("\n") == 1
    assert "Traceback" not in capfd.readouterr().err
