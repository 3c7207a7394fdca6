"""Visualizer: log-to-visible latency, a 1,000,000-point replay beside TensorBoard, idle S3 cost.

    python -m bench visualizer

Every part is real: a visdom server (the project's offline one) on a free port,
a trainer process writing with the Recorder, the visualizer's own command line
in a subprocess for the replay, and SeaweedFS for S3.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

from snapshot_store import Recorder
from snapshot_store.reader import read_store
from tests.fixtures.net import free_port
from visualizer.server.endpoint import VisdomEndpoint

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger(__name__)

REPLAY_POINTS = 1_000_000
REPLAY_SERIES = 4
LATENCY_SECONDS = 10.0
LATENCY_RATE_HZ = 50
S3_TIME_SCALE = 100  # the idle S3 hour is measured in 36 s with every interval divided by this


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _subprocess_json(code: str, timeout: float = 600) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line last on stdout."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"benchmark child failed ({result.returncode}):\n{result.stderr[-3000:]}"
        )
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- latency: log() in a trainer process -> sent to visdom -> visible in visdom ---------------

LATENCY_PREFILL_STEPS = 50_000  # four losses already this long: windows at --max-points

_TRAINER = """
import sys, time
from snapshot_store import Recorder
store, seconds, rate, prefill = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
with Recorder(store) as rec:   # default flush interval, as a trainer runs
    for step in range(prefill):                      # the history a long run already has
        rec.log({f"loss_{i}": 1.0 / (step + 1) + i for i in range(4)}, step=step)
    rec.flush()
    time.sleep(3.0)                                  # the follower replays it
    step, start = prefill, time.time()
    while time.time() - start < seconds:
        rec.log({f"loss_{i}": 1.0 / (step + 1) + i for i in range(4)}, step=step)
        step += 1
        time.sleep(1.0 / rate)
"""


def _latency(root: Path, endpoint: VisdomEndpoint) -> dict:
    from visualizer.follower import Follower
    from visualizer.server.client import VisdomClient

    store = root / "latency" / "pickle"
    key = ("train", "loss_0")
    sent_at: list[tuple[int, float]] = []  # (last step on the server, when the POST returned)

    def on_sent(run: str, steps: dict, when: float) -> None:
        if key in steps and (not sent_at or steps[key] > sent_at[-1][0]):
            sent_at.append((steps[key], when))

    follower = Follower(str(store), VisdomClient(endpoint), on_sent=on_sent)
    thread = threading.Thread(target=follower.run, daemon=True)
    thread.start()

    # An independent observer: visdom's own answer to "what does the window hold", every
    # 20 ms. Decimation keeps the last point, so the last x is the newest step shown.
    viewer, visible_at, stop = VisdomClient(endpoint), [], threading.Event()

    def observe() -> None:
        while not stop.is_set():
            try:
                traces = viewer.window_data("latency", "train")["content"]["data"]
                last = next(t["x"][-1] for t in traces if t["name"] == "loss_0")
                if not visible_at or last > visible_at[-1][0]:
                    visible_at.append((last, time.time()))
            except Exception:
                pass  # window not there yet
            time.sleep(0.02)

    observer = threading.Thread(target=observe, daemon=True)
    observer.start()
    subprocess.run(
        [
            sys.executable,
            "-c",
            _TRAINER,
            str(store),
            str(LATENCY_SECONDS),
            str(LATENCY_RATE_HZ),
            str(LATENCY_PREFILL_STEPS),
        ],
        cwd=ROOT,
        check=True,
        timeout=LATENCY_SECONDS + 120,
    )
    time.sleep(1.5)
    stop.set()
    follower.stop()
    thread.join(10)
    observer.join(10)

    history, _, _ = read_store(store)
    steps, _, logged_at, _ = history.series(key)
    window = VisdomClient(endpoint).window_data("latency", "train")["content"]["data"]

    def delays(events: list[tuple[int, float]]) -> list[float]:
        out = []
        for step, wall in zip(steps, logged_at, strict=True):
            if step >= LATENCY_PREFILL_STEPS:
                first = next((t for s, t in events if s >= step), None)
                if first is not None:
                    out.append(first - wall)
        return out

    live = sum(1 for s in steps if s >= LATENCY_PREFILL_STEPS)
    sent, visible = delays(sent_at), delays(visible_at)
    return {
        "points": live,
        "sent": sent,
        "visible": visible,
        "all_visible": len(visible) == live and all(len(t["x"]) <= 2000 for t in window),
    }


# --- replay of a 1,000,000-point run, beside TensorBoard's EventAccumulator --------------------


def _write_store(store: Path) -> None:
    with Recorder(store) as rec:
        for step in range(REPLAY_POINTS // REPLAY_SERIES):
            rec.log({f"loss_{i}": step * 0.001 + i for i in range(REPLAY_SERIES)}, step=step)


def _write_tensorboard(logdir: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(logdir), max_queue=10_000)
    for step in range(REPLAY_POINTS // REPLAY_SERIES):
        for i in range(REPLAY_SERIES):
            writer.add_scalar(f"train/loss_{i}", step * 0.001 + i, step)
    writer.close()


# Peak memory is VmHWM, the child's own high-water mark: ru_maxrss survives
# execve on Linux, so a child of a big benchmark process would report the parent's.
_PEAK_MB = (
    "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) / 1024"
)

_REPLAY_CHILD = (
    """
import json, sys, time
started = time.perf_counter()
from visualizer.cli import main
rc = main(["--pickle-dir", {store!r}, "--port", "{port}", "--once", "--no-start-server", "--log-level", "WARNING"])
print(json.dumps({{"rc": rc, "seconds": time.perf_counter() - started,
                  "maxrss_mb": """
    + _PEAK_MB
    + """}}))
"""
)

_TENSORBOARD_CHILD = (
    """
import json, time
started = time.perf_counter()
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator({logdir!r}, size_guidance={{"scalars": 0}})  # 0: keep every point
acc.Reload()
points = sum(len(acc.Scalars(tag)) for tag in acc.Tags()["scalars"])
print(json.dumps({{"points": points, "seconds": time.perf_counter() - started,
                  "maxrss_mb": """
    + _PEAK_MB
    + """}}))
"""
)


def _replay(root: Path, endpoint: VisdomEndpoint) -> dict:
    from visualizer.server.client import VisdomClient

    store = root / "replay-1m" / "pickle"
    _write_store(store)
    wall = time.perf_counter()
    ours = _subprocess_json(_REPLAY_CHILD.format(store=str(store), port=endpoint.port))
    ours["wall_seconds"] = time.perf_counter() - wall  # interpreter start included
    window = VisdomClient(endpoint).window_data("replay-1m", "train")
    last = REPLAY_POINTS // REPLAY_SERIES - 1
    traces = window["content"]["data"]
    raw = [t for t in traces if t.get("meta") != "smoothed"]  # each series' smoothed curve too
    ours["fully_displayed"] = all(t["x"][-1] == last for t in traces) and len(raw) == REPLAY_SERIES
    logdir = root / "tensorboard-1m"
    _write_tensorboard(logdir)
    tb = _subprocess_json(_TENSORBOARD_CHILD.format(logdir=str(logdir)), timeout=1200)
    return {"ours": ours, "tb": tb}


# --- S3: requests an idle run costs ------------------------------------------------------------


def _idle_s3_requests(root: Path, endpoint: VisdomEndpoint) -> dict:
    from tests.fixtures.seaweed import CONFLICTING_ENV, SeaweedS3
    from visualizer.follower import DEFAULT_MAX_IDLE_INTERVAL, DEFAULT_POLL_INTERVAL, Follower
    from visualizer.server.client import VisdomClient
    from visualizer.sources.s3 import make_client

    store = root / "s3run" / "pickle"
    with Recorder(store) as rec:
        for step in range(100):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
    saved = {
        k: os.environ.get(k)
        for k in (
            *CONFLICTING_ENV,
            "AWS_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_DEFAULT_REGION",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
        )
    }
    with SeaweedS3(root / "seaweedfs") as server:
        try:
            for name in CONFLICTING_ENV:
                os.environ.pop(name, None)
            os.environ.update(server.env())
            server.client().create_bucket(Bucket="bench")
            for path in store.iterdir():
                server.client().put_object(
                    Bucket="bench", Key=f"runs/s3run/pickle/{path.name}", Body=path.read_bytes()
                )
            client = make_client()
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
            window = 3600 / S3_TIME_SCALE
            time.sleep(window)
            follower.stop()
            thread.join(10)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return {"per_hour": len(requests), "gets": sum("GetObject" in r for r in requests)}


def run() -> list[dict]:
    """Rows: latency p50/p99, 1M-point replay time and memory beside TensorBoard, idle S3 requests/hour."""
    from visualizer.server.process import VisdomServer

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        endpoint = VisdomEndpoint(port=free_port())
        with VisdomServer(endpoint, env_path=root / "envs", log_path=root / "visdom.log"):
            lat = _latency(root, endpoint)
            sent_p50, sent_p99 = _percentile(lat["sent"], 50), _percentile(lat["sent"], 99)
            vis_p50, vis_p99 = _percentile(lat["visible"], 50), _percentile(lat["visible"], 99)
            rows.append(
                {
                    "benchmark": f"log -> sent to visdom ({lat['points']} steps x 4 losses at {LATENCY_RATE_HZ} Hz, "
                    f"{LATENCY_PREFILL_STEPS:,}-step history)",
                    "ours": f"p50 {sent_p50 * 1e3:.0f} ms, p99 {sent_p99 * 1e3:.0f} ms",
                    "reference": "",
                    "ratio": "",
                    "target": "p50 <= 250 ms, p99 <= 1 s",
                    "met": sent_p50 <= 0.25 and sent_p99 <= 1.0,
                }
            )
            rows.append(
                {
                    "benchmark": "log -> visible in visdom's win_data (polled every 20 ms)",
                    "ours": f"p50 {vis_p50 * 1e3:.0f} ms, p99 {vis_p99 * 1e3:.0f} ms",
                    "reference": "",
                    "ratio": "",
                    "target": "p50 <= 250 ms, p99 <= 1 s",
                    "met": vis_p50 <= 0.25 and vis_p99 <= 1.0 and lat["all_visible"],
                }
            )

            replay = _replay(root, endpoint)
            ours, tb = replay["ours"], replay["tb"]
            rows.append(
                {
                    "benchmark": f"replay {REPLAY_POINTS:,} points until fully displayed",
                    "ours": f"{ours['wall_seconds']:.2f} s (process start to exit)",
                    "reference": f"EventAccumulator load {tb['seconds']:.1f} s ({tb['points'] / tb['seconds']:,.0f} pts/s)",
                    "ratio": f"{tb['seconds'] / ours['wall_seconds']:.0f}x faster",
                    "target": "<= 3 s",
                    "met": ours["rc"] == 0
                    and ours["fully_displayed"]
                    and ours["wall_seconds"] <= 3.0,
                }
            )
            rows.append(
                {
                    "benchmark": f"replay {REPLAY_POINTS:,} points: peak memory",
                    "ours": f"{ours['maxrss_mb']:.0f} MB",
                    "reference": f"EventAccumulator {tb['maxrss_mb']:.0f} MB",
                    "ratio": f"{tb['maxrss_mb'] / ours['maxrss_mb']:.1f}x less",
                    "target": "<= 300 MB",
                    "met": ours["maxrss_mb"] <= 300,
                }
            )

            s3 = _idle_s3_requests(root, endpoint)
            rows.append(
                {
                    "benchmark": f"idle S3 run: requests per hour (time scaled 1/{S3_TIME_SCALE})",
                    "ours": f"{s3['per_hour']} ({s3['gets']} GETs)",
                    "reference": "TensorBoard: a re-read every 5 s, >= 720",
                    "ratio": f"{720 / max(1, s3['per_hour']):.0f}x fewer",
                    "target": "<= 120",
                    "met": s3["per_hour"] <= 120,
                }
            )
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
