"""Transfer: upload throughput of ``transfer_plugins.s3.save_to_s3`` beside boto3's
``upload_file`` alone, against a SeaweedFS server this benchmark starts itself; and a
1 GB checkpoint uploaded through the transfer runner while the project's training
step runs (issue 5: step time <= 1.05x the baseline, throughput >= 0.8x upload_file).

    python -m bench transfer

The training step is the CLI's: SmallCNN, cross-entropy and Adam on the generated
shapes, batches from a DataLoader, torch pinned to one thread.

A real S3 endpoint is on another machine, behind a link: the checkpoint rows that
carry the targets send to the local server through a 400 Mbit/s link
(``bench/tools/link.py``, needs root and tc), with ``upload_file`` alone over the same
link as the reference. The same rows over plain loopback follow as diagnostics:
there the upload is bound by CPU, most of it the server's (shown per GB), which a
remote endpoint would not take from training; the last row says the most any
uploader could reach there while training keeps its core. Between them, the
"floor" row is the step cost of a process that only spins on idle CPU: what this
machine charges for any work at all on the spare core.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.tools.s3_env import BUCKET, MB, environ, forget_uploader
from bench.transfer.transfer_training import run_during_training
from tests.fixtures.servers.seaweed import SeaweedS3
from transfer_plugins import s3 as s3_plugin


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
    forget_uploader()
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


def run(
    size_mb: int = 256, repeats: int = 3, training_size_mb: int = 1000, training_repeats: int = 5
) -> list[dict]:
    """Rows: large-file upload throughput, the cost of re-announcing it unchanged, and a
    ``training_size_mb`` checkpoint uploaded during training (0 skips that part)."""
    rows = _throughput_rows(size_mb, repeats)
    if training_size_mb:
        rows += run_during_training(training_size_mb, training_repeats)
    return rows


def _throughput_rows(size_mb: int, repeats: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp, SeaweedS3(Path(tmp) / "seaweedfs") as server:
        server.client().create_bucket(Bucket=BUCKET)
        path = Path(tmp) / "latest.pth"
        path.write_bytes(os.urandom(size_mb * MB))
        with environ({**server.env(), s3_plugin.URI_ENV: f"s3://{BUCKET}/runs"}):
            seconds = measure(server, path, repeats)
        forget_uploader()
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
