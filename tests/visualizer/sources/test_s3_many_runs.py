"""Many finished runs in a bucket: idle, they cost the prefix's discovery listing, not a request
each; a run uploaded later shows in the runs table."""

from __future__ import annotations

import math
import time
from urllib.parse import unquote

from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from tests.visualizer.sources.test_s3 import RequestLog, upload
from visualizer.follower import S3_DISCOVERY_INTERVAL
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.sources.s3 import make_read_client

RUNS, COMPARED = 30, 5
IDLE_S = 20.0  # the window requests are counted over (a measurement, not a condition)


def test_idle_finished_runs_cost_the_discovery_listing_and_a_new_run_shows(
    tmp_path, s3_bucket, visdom_server, reader, run_name
):
    names = write_small_runs(tmp_path / "local", RUNS)
    for name in names:
        upload(s3_bucket, tmp_path / "local" / name / "pickle", f"{run_name}/{name}/pickle/")
    client = make_read_client()
    log = RequestLog(client)
    with following(
        s3_bucket.uri(f"{run_name}/"), visdom_server.endpoint, env=run_name, compare=COMPARED,
        poll_interval=0.05, s3_client=client,
    ) as follower:  # fmt: skip
        wait_until(
            lambda: (
                follower.catalog.complete
                and len(follower.known) == RUNS
                and len(follower.feeds) == COMPARED
                and all(feed.replayed for feed in follower.feeds.values())
            ),
            timeout=60,
        )
        compared = set(follower.feeds)
        log.clear()
        time.sleep(IDLE_S)
        urls = [unquote(url) for url in log.urls]
        asked = {name for name in names if any(f"/{name}/" in url for url in urls)}
        assert asked <= compared, f"runs not followed cost requests: {sorted(asked - compared)}"
        discovery = [u for u in urls if f"prefix={run_name}/&" in u or u.endswith(f"{run_name}/")]
        assert len(discovery) <= math.ceil(IDLE_S / S3_DISCOVERY_INTERVAL) + 1, discovery
        others = [u for u in urls if u not in discovery and not any(n in u for n in compared)]
        assert others == [], others

        write_small_runs(tmp_path / "late", 1)
        upload(s3_bucket, tmp_path / "late" / names[0] / "pickle", f"{run_name}/late-run/pickle/")
        wait_until(lambda: "late-run" in follower.known, timeout=S3_DISCOVERY_INTERVAL + 30)
        table = follower.screen.index.win
        wait_until(lambda: "late-run</a>" in reader.windows(INDEX_ENV)[table]["content"])
