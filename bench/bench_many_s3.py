"""Many runs in S3: the visualizer following 10,000 finished runs in a bucket and 10 still
training, counting the requests it sends to start and while idle, and timing how soon a
live run's new point and a new run show; its memory and its CPU while idle.

    python -m bench many_s3                     # 10,000 runs: about 10 minutes
    BENCH_MANY_RUNS=200 python -m bench many_s3

The runs (:mod:`workloads.many_runs`) are uploaded to SeaweedFS on loopback
(:class:`tests.fixtures.servers.seaweed.SeaweedS3`); the visualizer's own command line follows
``s3://bench/runs/`` through :class:`workloads.s3_proxy.CountingProxy`, which counts every
request on its way to the server. The live runs (:mod:`bench.many.live_runs`) put their files
in the bucket directly, as a transfer hook does; their requests are not the viewer's.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from bench.bench_many import scales, seconds
from bench.many.live_runs import LiveRuns
from bench.many.many_measure import (
    PACE,
    Pace,
    all_read,
    open_run,
    until,
    visualizer,
    wait_url,
)
from bench.tools.process_tree import MB, PeakRss, terminate_tree, tree_cpu
from bench.tools.s3_env import BUCKET
from snapshot_store.format.frames import STATUS_FILE
from tests.fixtures.servers.visdom_reading import VisdomReader, page_on
from visualizer.follower import DEFAULT_POLL_INTERVAL
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.sources.s3 import FETCHES_AT_ONCE
from visualizer.sources.s3_runs import PAGE_GAP_S
from workloads.many_runs import write_runs
from workloads.s3_proxy import CountingProxy

S3_RUNS = 10_000
READ_TARGET = 1.2  # every summary read: at most this many times boto3 alone's listing and GETs
MEMORY_TARGET_MB, CPU_TARGET = 500, 0.02
UPLOAD_THREADS = 16  # small files: the server's latency, not its bandwidth, bounds one thread
IDLE_TARGET = 10  # requests a minute, for every finished run together
LIVE = 10  # runs training while the viewer starts and idles
POINT_SAMPLES = 5  # a live run's points timed until drawn
# New runs started once every run is read, found past 1,000 runs by the listing after the last
# run (every 8 s) and by the folders' walk (visualizer.sources.s3_runs). "live-": they train on.
NEW_RUNS = {"after": "run-live-new", "before": "a-live-new"}
LIVES = LIVE + len(NEW_RUNS)  # training while idle is measured
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


def boto3_read(server: Any) -> float:
    """Seconds boto3 alone takes to do what a first read of the bucket asks of it: list the
    prefix, then GET every run's status (which repeats its meta's name and options),
    :data:`FETCHES_AT_ONCE` at a time (the reference for the viewer's read; no decoding,
    no page)."""
    client = server.client(max_pool_connections=FETCHES_AT_ONCE)
    began = time.perf_counter()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=PREFIX):
        names = (item["Key"] for item in page.get("Contents", []))
        keys += [key for key in names if key.endswith(f"/{STATUS_FILE}")]

    def get(key: str) -> bytes:
        return client.get_object(Bucket=BUCKET, Key=key)["Body"].read()

    with ThreadPoolExecutor(FETCHES_AT_ONCE) as pool:
        list(pool.map(get, keys))
    return time.perf_counter() - began


def _kinds(counts: Counter[str]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts.most_common())


def measure_s3(server: Any, work: Path, runs: int, pace: Pace = PACE) -> dict[str, Any]:
    """With :data:`LIVE` runs training beside the ``runs`` finished ones: requests and seconds until the
    URL and until every summary is read; then a live run's new points and a new run timed
    until the viewer shows them; then requests over ``pace.s3_idle`` s, finished runs' apart."""
    from tests.fixtures.servers.seaweed import CONFLICTING_ENV

    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"idle": None, "read_s": None, "read": Counter(), "point_s": None}
    out |= {"cpu": None, "peak": 0}
    out |= {"new_s": dict.fromkeys(NEW_RUNS), "idle_paths": []}
    with CountingProxy(server.endpoint_url) as proxy, _live(server, work) as live:
        env = {k: v for k, v in os.environ.items() if k not in CONFLICTING_ENV}
        env |= server.env() | {"AWS_ENDPOINT_URL": proxy.url}
        began = time.perf_counter()
        proc = visualizer(f"s3://{BUCKET}/{PREFIX}/", work, env)
        try:
            with PeakRss(proc.pid) as peak:
                _measure(proc, work, runs, live, proxy, began, pace, out)
        finally:
            out["exit_s"], out["left"] = terminate_tree(proc, pace.exit_cap)
    out["peak"] = peak.peak
    return out


def _measure(
    proc: Any, work: Path, runs: int, live: LiveRuns, proxy: CountingProxy, began: float,
    pace: Pace, out: dict[str, Any],
) -> None:  # fmt: skip
    """measure_s3's phases, into ``out``."""
    printed = wait_url(proc, began, pace.start_cap)
    out["url_s"], out["why"] = printed.seconds, printed.why
    out["start"] = proxy.snapshot()
    if printed.seconds is None:
        return
    # Idle is once every run's summary is in: the first read is not idle.
    out["read_s"] = until(all_read(work, runs + LIVE), began, pace.start_cap)
    out["read"] = proxy.snapshot() - out["start"]
    endpoint = VisdomEndpoint.parse(printed.base)
    reader = VisdomReader(endpoint)
    open_run(work, "live-00")  # its page, opened as a person does: then drawn
    with page_on(endpoint, "live-00"):  # and left open while the points are timed
        out["point_s"] = _point_latency(reader, live, pace.start_cap)
    out["new_s"] = _new_run_latency(reader, live, max(pace.start_cap, _walk_s(runs) + 60))
    time.sleep(pace.settle)
    before, first, cpu = proxy.snapshot(), len(proxy.paths), tree_cpu(proc.pid)
    time.sleep(pace.s3_idle)
    out["cpu"] = (tree_cpu(proc.pid) - cpu) / pace.s3_idle
    out["idle"] = proxy.snapshot() - before
    out["idle_paths"] = proxy.paths_since(first)


@contextmanager
def _live(server: Any, work: Path) -> Iterator[LiveRuns]:
    """:data:`LIVE` runs training into the bucket, each with its first step in."""
    with LiveRuns(server.client(), BUCKET, PREFIX, work / "live") as live:
        for index in range(LIVE):
            live.add(f"live-{index:02d}")
        for index in range(LIVE):
            until(lambda i=index: bool(live.uploaded(f"live-{i:02d}")), time.perf_counter(), 60)
        yield live


def _shown_step(reader: VisdomReader, env: str) -> int:
    """The largest step any plot of ``env`` draws (-1 before any)."""
    steps = [-1]
    for window in reader.windows(env).values():
        content = window.get("content")
        for trace in content.get("data", []) if isinstance(content, dict) else []:
            steps += [x for x in trace.get("x") or [] if isinstance(x, int | float)]
    return int(max(steps))


def _point_latency(reader: VisdomReader, live: LiveRuns, cap: float) -> float | None:
    """Median seconds from a live run's point in the bucket until its page draws it."""
    latencies = []
    for _ in range(POINT_SAMPLES):
        uploaded = live.uploaded("live-00")
        step = max(uploaded)
        shown = until(lambda s=step: _shown_step(reader, "live-00") >= s, uploaded[step], cap)
        if shown is None:
            return None
        latencies.append(shown)
    return statistics.median(latencies)


def _walk_s(runs: int) -> float:
    """Seconds the walk through ``runs`` folders takes: a page of 1,000 a minute."""
    return math.ceil((runs + LIVES) / 1000) * PAGE_GAP_S


def _new_run_latency(reader: VisdomReader, live: LiveRuns, cap: float) -> dict[str, float | None]:
    """Seconds from each new run's first files in the bucket until the runs table lists it,
    by where its name sorts (:data:`NEW_RUNS`)."""
    for name in NEW_RUNS.values():
        live.add(name)
    latency: dict[str, float | None] = {}
    for where, name in NEW_RUNS.items():
        until(lambda n=name: bool(live.uploaded(n)), time.perf_counter(), cap)
        first = live.uploaded(name).get(0)

        def listed(n: str = name) -> bool:
            return any(n in str(w.get("content")) for w in reader.windows("main").values())

        latency[where] = None if first is None else until(listed, first, cap)
    return latency


def _row(benchmark: str, ours: str, target: str = "", met: bool | None = None) -> dict:
    row = {"benchmark": benchmark, "ours": ours, "reference": "", "ratio": ""}
    return row | ({"target": target, "met": bool(met)} if target else {})


def _for_live_run(path: str) -> bool:
    """Whether a request is for a live run: its key or its listing's prefix names one (a
    discovery listing starting after a live run's name is the finished runs')."""
    key, _, query = path.partition("?")
    prefix = parse_qs(query).get("prefix", [""])[0]
    return "live-" in unquote(key) or "live-" in prefix


def _idle_rows(runs: int, ours: dict, pace: Pace) -> list[dict]:
    """Requests a minute while idle: the finished runs' (discovery included), the live runs'."""
    if ours["idle"] is None:
        return [_row(f"{runs:,} runs in S3 idle: requests a minute", "not started")]
    live = [path for path in ours["idle_paths"] if _for_live_run(path)]
    finished = len(ours["idle_paths"]) - len(live)
    minute = 60.0 / pace.s3_idle
    when = f"over {pace.s3_idle:.0f} s, {pace.settle:.0f} s after every run was read"
    return [
        _row(
            f"{runs:,} finished runs in S3 idle, {LIVE} live beside them: requests a minute for "
            f"every finished run together, discovery included ({when})",
            f"{finished * minute:,.0f}",
            f"<= {IDLE_TARGET} a minute",
            finished * minute <= IDLE_TARGET,
        ),
        _row(
            f"the same minute: requests for the {LIVES} live runs, and all of them by kind",
            f"{len(live) * minute:,.0f} ({_kinds(ours['idle'])})",
            f"all: <= {IDLE_TARGET} + 1 a live run ({IDLE_TARGET + LIVES})",
            len(ours["idle_paths"]) * minute <= IDLE_TARGET + LIVES,
        ),
    ]


def _tree_rows(what: str, ours: dict, pace: Pace) -> list[dict]:
    """The visualizer and its visdom: peak memory, CPU over the idle minute."""
    cpu = ours["cpu"]
    return [
        _row(
            f"{what}: peak RSS of the visualizer + its visdom (process tree)",
            f"{ours['peak'] / MB:,.0f} MB",
            f"<= {MEMORY_TARGET_MB} MB",
            0 < ours["peak"] <= MEMORY_TARGET_MB * MB,
        ),
        _row(
            f"{what}, idle: CPU over the same {pace.s3_idle:.0f} s (every process and thread)",
            "not reached" if cpu is None else f"{cpu * 100:.1f}% of a core",
            f"<= {CPU_TARGET * 100:.0f}% of a core",
            cpu is not None and cpu <= CPU_TARGET,
        ),
    ]


def rows(runs: int, files: int, took: float, ours: dict, pace: Pace = PACE) -> list[dict]:
    """Start, every summary read, a live point, a new run, idle requests, the upload."""
    start, read, point, new = ours["start"], ours["read"], ours["point_s"], ours["new_s"]
    what = f"{runs:,} finished + {LIVE} live runs in S3 (SeaweedFS on loopback)"
    read_s, boto3_s = ours["read_s"], ours.get("boto3_s")
    read_row = _row(
        f"{what}: every run's summary read (the table whole), from the start",
        f"{seconds(read_s, 'not read')}, {sum(read.values()):,} requests after "
        f"the URL ({_kinds(read)})",
        f"<= {READ_TARGET}x boto3 alone",
        read_s is not None and boto3_s is not None and read_s <= READ_TARGET * boto3_s,
    )
    if boto3_s is not None:  # measured once the viewer and the live runs stopped
        read_row["reference"] = (
            f"boto3 alone, the listing and every run's status ({FETCHES_AT_ONCE} at "
            f"once), no start: {boto3_s:.2f} s"
        )
        read_row["ratio"] = "" if read_s is None else f"{read_s / boto3_s:.2f}x boto3's"
    url_s = ours["url_s"]
    return [
        _row(
            f"{what}: start -> `visdom:` URL",
            f"{seconds(url_s, ours['why'])}, {sum(start.values()):,} requests ({_kinds(start)})",
            "<= 3 s",
            url_s is not None and url_s <= 3.0,
        ),
        read_row,
        _row(
            f"{what}: a live run's new point, from its files in the bucket until its page draws "
            f"it (median of {POINT_SAMPLES})",
            seconds(point, "not drawn"),
            "<= 2 poll intervals (2 s)",
            point is not None and point <= 2 * DEFAULT_POLL_INTERVAL,
        ),
        _row(
            f"{what}: a new run named after the others, from its first files in the bucket "
            "until the runs table lists it",
            seconds(new["after"], "not listed"),
            "<= 10 s",
            new["after"] is not None and new["after"] <= 10.0,
        ),
        _row(
            f"{what}: a new run named before the others (found by the walk through the "
            "folders, a page of 1,000 a minute past 1,000 runs), the same",
            seconds(new["before"], "not listed"),
            f"<= a minute a page ({_walk_s(runs):.0f} s)",
            new["before"] is not None and new["before"] <= _walk_s(runs),
        ),
        *_idle_rows(runs, ours, pace),
        *_tree_rows(what, ours, pace),
        _row(
            f"upload of the {runs:,} runs ({files:,} files, {UPLOAD_THREADS} threads)",
            f"{took:.1f} s",
        ),
    ]


def run(pace: Pace = PACE) -> list[dict]:
    """Rows: S3 requests and seconds to start, live points and a new run timed, requests a
    minute idle, the upload's time."""
    from tests.fixtures.servers.seaweed import SeaweedS3

    runs = min(max(scales()), S3_RUNS)
    with tempfile.TemporaryDirectory(prefix="bench-many-s3-") as tmp:
        root = Path(tmp)
        write_runs(root / "runs", runs)
        with SeaweedS3(root / "seaweedfs") as server:
            began = time.perf_counter()
            files = upload(server, root / "runs")
            took = time.perf_counter() - began
            ours = measure_s3(server, root / "work", runs, pace)
            ours["boto3_s"] = boto3_read(server)
    return rows(runs, files, took, ours, pace)


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
