"""Many runs in S3: the visualizer following 1,000 finished runs in a bucket, counting the
requests it sends to start and while idle.

    python -m bench many_s3                     # 1,000 runs
    BENCH_MANY_RUNS=200 python -m bench many_s3

The runs (:mod:`bench.many_runs`) are uploaded to SeaweedFS on loopback
(:class:`tests.fixtures.seaweed.SeaweedS3`); the visualizer's own command line follows
``s3://bench/runs/`` through :class:`bench.s3_proxy.CountingProxy`, which counts every
request on its way to the server.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.bench_many import scales, seconds
from bench.many_measure import PACE, READ_ALL, Pace, log_text, until, visualizer, wait_url
from bench.many_runs import write_runs
from bench.process_tree import terminate_tree
from bench.s3_env import BUCKET
from bench.s3_proxy import CountingProxy

S3_RUNS = 1_000
UPLOAD_THREADS = 16  # small files: the server's latency, not its bandwidth, bounds one thread
IDLE_TARGET = 10  # requests a minute
PREFIX = "runs"
log = logging.getLogger(__name__)


def upload(server: Any, runs_dir: Path) -> int:
    """Put every file under ``runs_dir`` in the bucket under ``PREFIX/``; the number of files."""
    client = server.client(max_pool_connections=UPLOAD_THREADS)
    client.create_bucket(Bucket=BUCKET)
    files = [path for path in runs_dir.rglob("*") if path.is_file()]

    def put(path: Path) -> None:
        key = f"{PREFIX}/{path.relative_to(runs_dir).as_posix()}"
        client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())

    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        list(pool.map(put, files))
    return len(files)


def _kinds(counts: Counter[str]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts.most_common())


def measure_s3(server: Any, work: Path, pace: Pace = PACE) -> dict[str, Any]:
    """Requests and seconds until the URL, then requests over ``pace.s3_idle`` s idle."""
    from tests.fixtures.seaweed import CONFLICTING_ENV

    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"idle": None, "read_s": None, "read": Counter()}
    with CountingProxy(server.endpoint_url) as proxy:
        env = {k: v for k, v in os.environ.items() if k not in CONFLICTING_ENV}
        env |= server.env() | {"AWS_ENDPOINT_URL": proxy.url}
        began = time.perf_counter()
        proc = visualizer(f"s3://{BUCKET}/{PREFIX}/", work, env)
        try:
            printed = wait_url(proc, began, pace.start_cap)
            out["url_s"], out["why"] = printed.seconds, printed.why
            out["start"] = proxy.snapshot()
            if out["url_s"] is not None:
                # Idle is once every run's summary is in: the first read is not idle.
                read = time.perf_counter()
                out["read_s"] = until(lambda: READ_ALL in log_text(work), read, pace.start_cap)
                out["read"] = proxy.snapshot() - out["start"]
                time.sleep(pace.settle)
                before = proxy.snapshot()
                time.sleep(pace.s3_idle)
                out["idle"] = proxy.snapshot() - before
        finally:
            out["exit_s"], out["left"] = terminate_tree(proc, pace.exit_cap)
    return out


def rows(runs: int, files: int, took: float, ours: dict, pace: Pace = PACE) -> list[dict]:
    """The start row, the idle row (with the target) and the upload row."""
    start = ours["start"]
    idle = ours["idle"]
    per_minute = None if idle is None else sum(idle.values()) * 60.0 / pace.s3_idle
    return [
        {
            "benchmark": f"{runs:,} runs in S3 (SeaweedFS on loopback): start -> `visdom:` URL",
            "ours": f"{seconds(ours['url_s'], ours['why'])}, {sum(start.values()):,} requests "
            f"({_kinds(start)})",
            "reference": "",
            "ratio": "",
        },
        {
            "benchmark": f"{runs:,} runs in S3: every run's summary read (the table whole), "
            "after the URL",
            "ours": f"{seconds(ours['read_s'], 'not read')}, {sum(ours['read'].values()):,} "
            f"requests ({_kinds(ours['read'])})",
            "reference": "",
            "ratio": "",
            "target": "<= 10 s from the start",
            "met": ours["read_s"] is not None and ours["url_s"] + ours["read_s"] <= 10.0,
        },
        {
            "benchmark": f"{runs:,} runs in S3 idle: requests a minute (over {pace.s3_idle:.0f} s, "
            f"{pace.settle:.0f} s after every run was read)",
            "ours": "not started" if idle is None else f"{per_minute:,.0f} ({_kinds(idle)})",
            "reference": "",
            "ratio": "",
            "target": f"<= {IDLE_TARGET} a minute",
            "met": per_minute is not None and per_minute <= IDLE_TARGET,
        },
        {
            "benchmark": f"upload of the {runs:,} runs ({files:,} files, {UPLOAD_THREADS} threads)",
            "ours": f"{took:.1f} s",
            "reference": "",
            "ratio": "",
        },
    ]


def run(pace: Pace = PACE) -> list[dict]:
    """Rows: S3 requests and seconds to start, requests a minute idle, the upload's time."""
    from tests.fixtures.seaweed import SeaweedS3

    runs = min(max(scales()), S3_RUNS)
    with tempfile.TemporaryDirectory(prefix="bench-many-s3-") as tmp:
        root = Path(tmp)
        write_runs(root / "runs", runs)
        with SeaweedS3(root / "seaweedfs") as server:
            began = time.perf_counter()
            files = upload(server, root / "runs")
            took = time.perf_counter() - began
            ours = measure_s3(server, root / "work", pace)
    return rows(runs, files, took, ours, pace)


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
