"""Transfer: upload throughput of ``transfer_plugins.s3.save_to_s3`` beside boto3's
``upload_file`` alone, against a SeaweedFS server this benchmark starts itself.

    python -m bench transfer
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from bench.seaweed import CONFLICTING_ENV, SeaweedS3
from transfer_plugins import s3 as s3_plugin

BUCKET = "bench"
MB = 1_000_000


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """Set ``values`` (and clear CONFLICTING_ENV) in os.environ for the block."""
    saved = dict(os.environ)
    for name in CONFLICTING_ENV:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _median_seconds(action: Callable[[int], object], repeats: int) -> float:
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        action(i)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(server: SeaweedS3, path: Path, repeats: int) -> dict[str, float]:
    """Median seconds to upload ``path``: boto3 alone, ours, and ours for an unchanged
    file (``resent`` counts the times that one was sent anyway).

    Expects TRANSFER_S3_URI and the server's AWS_* variables in the environment.
    """
    client = server.client()
    s3_plugin.reset()
    s3_plugin.preflight()  # the client is created once per process, as in training

    def reference(i: int) -> None:
        client.upload_file(str(path), BUCKET, f"reference/{i}/{path.name}")

    def ours(i: int) -> None:
        s3_plugin.save_to_s3(path, f"ours/{i}/{path.name}")

    resent = 0

    def unchanged(_: int) -> None:
        nonlocal resent
        resent += s3_plugin.save_to_s3(path, f"ours/0/{path.name}")

    return {
        "reference": _median_seconds(reference, repeats),
        "ours": _median_seconds(ours, repeats),
        "unchanged": _median_seconds(unchanged, repeats),
        "resent": resent,
    }


def run(size_mb: int = 256, repeats: int = 3) -> list[dict]:
    """Rows: large-file upload throughput and the cost of re-announcing it unchanged."""
    with tempfile.TemporaryDirectory() as tmp, SeaweedS3(Path(tmp) / "seaweedfs") as server:
        server.client().create_bucket(Bucket=BUCKET)
        path = Path(tmp) / "latest.pth"
        path.write_bytes(os.urandom(size_mb * MB))
        with _environ({**server.env(), s3_plugin.URI_ENV: f"s3://{BUCKET}/runs"}):
            seconds = measure(server, path, repeats)
        s3_plugin.reset()
    ours_rate = size_mb / seconds["ours"]
    reference_rate = size_mb / seconds["reference"]
    return [
        {
            "benchmark": f"S3 upload, {size_mb} MB file (SeaweedFS, loopback)",
            "ours": f"{ours_rate:,.0f} MB/s",
            "reference": f"boto3 upload_file {reference_rate:,.0f} MB/s",
            "ratio": f"{ours_rate / reference_rate:.2f}x",
            "target": ">= 0.9x of upload_file",
            "met": ours_rate >= 0.9 * reference_rate,
        },
        {
            "benchmark": f"S3 re-announce of the unchanged {size_mb} MB file",
            "ours": f"{seconds['unchanged'] * 1e3:.2f} ms (skipped)",
            "reference": f"boto3 upload_file {seconds['reference'] * 1e3:,.0f} ms",
            "ratio": f"{seconds['reference'] / seconds['unchanged']:,.0f}x cheaper",
            "target": "not sent again",
            "met": seconds["resent"] == 0,
        },
    ]


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(run())
