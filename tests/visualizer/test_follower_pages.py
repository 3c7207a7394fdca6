"""A live S3 run of a sweep is read as often as the open pages show it (READ_GAPS): no page, not
in the test's time; a page of its curves opened, at once and every poll; the runs table's row
alone, at once and then every 10 s."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

import pytest

from snapshot_store import Recorder
from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.visdom_reading import following, page_on
from tests.fixtures.servers.waiting import running, wait_until
from tests.visualizer.sources.test_s3 import RequestLog, upload
from visualizer.follower import Follower
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.sources.s3 import make_read_client

pytestmark = pytest.mark.integration

PASSES = 20  # the follow loop's passes watched for requests


@contextmanager
def training(bucket, store: Path, prefix: str) -> Iterator[list[int]]:
    """A run logging a step every 0.1 s, its files put in the bucket as a transfer hook does;
    yields the steps logged so far."""
    stop, logged = threading.Event(), [-1]
    with Recorder(store, flush_interval=0.02) as rec:

        def train() -> None:
            while not stop.wait(0.1):
                rec.log({"loss": 1.0 / (logged[0] + 2)}, step=logged[0] + 1)
                rec.flush()
                upload(bucket, store, prefix)
                logged[0] += 1

        with running(train, stop.set, "training"):
            yield logged


def _shown(follower: Follower) -> frozenset[str] | None:
    return follower.client.events.pages


def _passes(follower: Follower) -> list[int]:
    count = [0]
    follower.on_pass = lambda now: count.__setitem__(0, count[0] + 1)
    return count


def _requests_over_passes(follower: Follower, log: RequestLog, passes: list[int]) -> list[str]:
    """The live run's requests while the loop passes PASSES times."""
    log.clear()
    start = passes[0]
    wait_until(lambda: passes[0] >= start + PASSES)
    return [url for url in map(unquote, log.urls) if "/live/" in url]


def test_a_live_s3_run_is_read_as_often_as_the_open_pages_show_it(
    tmp_path, s3_bucket, visdom_server, reader, run_name
):
    for name in write_small_runs(tmp_path / "done", 2):  # finished runs of the sweep beside it
        upload(s3_bucket, tmp_path / "done" / name / "pickle", f"{run_name}/{name}/pickle/")
    client = make_read_client()
    log = RequestLog(client)
    live = tmp_path / "live" / "pickle"
    with (
        training(s3_bucket, live, f"{run_name}/live/pickle/") as logged,
        following(
            s3_bucket.uri(f"{run_name}/"), visdom_server.endpoint, env=run_name,
            poll_interval=0.1, s3_client=client,
        ) as follower,
    ):  # fmt: skip
        passes = _passes(follower)
        wait_until(lambda: "live" in follower.feeds and follower.feeds["live"].replayed)
        wait_until(lambda: _shown(follower) is not None)  # told which pages are open: none
        wait_until(lambda: not follower.runs.watched, timeout=30)  # new runs: a page a minute
        assert _requests_over_passes(follower, log, passes) == [], "read with no page open"

        env = follower.env_of("live")
        with page_on(visdom_server.endpoint, env):
            step = logged[0]
            wait_until(lambda: reader.traces(env, "train")["loss"][0][-1] >= step)
            assert _requests_over_passes(follower, log, passes), "not read while shown"
        wait_until(lambda: _shown(follower) is not None and env not in _shown(follower))
        assert _requests_over_passes(follower, log, passes) == [], "read once the page closed"

        # The runs table shows its row alone: read at once, then not every poll (READ_GAPS).
        with page_on(visdom_server.endpoint, INDEX_ENV):
            log.clear()
            wait_until(lambda: any("/live/" in unquote(url) for url in log.urls))
            listings = [u for u in _requests_over_passes(follower, log, passes) if "list-type" in u]
            assert len(listings) <= 1, listings
            wait_until(lambda: follower.runs.watched, timeout=30)  # new runs at each discovery
