"""Requests an idle S3 run costs the visualizer's follower, over an hour scaled down."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from bench.tools.s3_env import environ
from snapshot_store import Recorder
from visualizer.server.endpoint import VisdomEndpoint

S3_TIME_SCALE = 100  # the idle S3 hour is measured in 36 s with every interval divided by this


def _upload_run(server: object, store: Path) -> None:
    """A 100-step run written locally, then put in the bucket ``bench`` under runs/s3run."""
    with Recorder(store) as rec:
        for step in range(100):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
    server.client().create_bucket(Bucket="bench")
    for path in store.iterdir():
        server.client().put_object(
            Bucket="bench", Key=f"runs/s3run/pickle/{path.name}", Body=path.read_bytes()
        )


def idle_s3_requests(root: Path, endpoint: VisdomEndpoint) -> dict:
    """S3 requests (and GETs among them) a follower sends in an idle hour, once replayed."""
    from tests.fixtures.servers.seaweed import SeaweedS3
    from visualizer.follower import DEFAULT_MAX_IDLE_INTERVAL, DEFAULT_POLL_INTERVAL, Follower
    from visualizer.sources.s3 import make_read_client
    from visualizer.visdom_client import VisdomClient

    with SeaweedS3(root / "seaweedfs") as server, environ(server.env()):
        _upload_run(server, root / "s3run" / "pickle")
        client = make_read_client()
        requests: list[str] = []
        client.meta.events.register(
            "before-send.s3", lambda event_name, **_: requests.append(event_name)
        )
        # The real schedule (1 s, doubling to 60 s), every interval divided by S3_TIME_SCALE.
        follower = Follower(
            "s3://bench/runs/s3run/pickle",
            VisdomClient(endpoint),
            poll_interval=DEFAULT_POLL_INTERVAL / S3_TIME_SCALE,
            max_idle_interval=DEFAULT_MAX_IDLE_INTERVAL / S3_TIME_SCALE,
            s3_client=client,
        )
        thread = threading.Thread(target=follower.run, daemon=True)
        thread.start()
        deadline = time.time() + 10
        while not follower.feeds or not follower.feeds["s3run"].replayed:
            if time.time() > deadline:
                raise RuntimeError("the S3 run was not replayed")
            time.sleep(0.01)
        requests.clear()
        time.sleep(3600 / S3_TIME_SCALE)
        follower.stop()
        thread.join(10)
    return {"per_hour": len(requests), "gets": sum("GetObject" in r for r in requests)}
