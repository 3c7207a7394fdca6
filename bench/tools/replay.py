"""A 1,000,000-point run replayed by the visualizer's command line, beside TensorBoard's
EventAccumulator loading the same points: each in a fresh interpreter, timed and its
peak memory read, so neither pays for the benchmark process around it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from snapshot_store import Recorder
from visualizer.server.endpoint import VisdomEndpoint

ROOT = Path(__file__).resolve().parents[2]
REPLAY_POINTS = 1_000_000
REPLAY_SERIES = 4


def subprocess_json(code: str, timeout: float = 600) -> dict:
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


def write_store(store: Path) -> None:
    with Recorder(store) as rec:
        for step in range(REPLAY_POINTS // REPLAY_SERIES):
            rec.log({f"loss_{i}": step * 0.001 + i for i in range(REPLAY_SERIES)}, step=step)


def write_tensorboard(logdir: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(logdir), max_queue=10_000)
    for step in range(REPLAY_POINTS // REPLAY_SERIES):
        for i in range(REPLAY_SERIES):
            writer.add_scalar(f"train/loss_{i}", step * 0.001 + i, step)
    writer.close()


# Peak memory is VmHWM, the child's own high-water mark: ru_maxrss survives
# execve on Linux, so a child of a big benchmark process would report the parent's.
PEAK_MB = (
    "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) / 1024"
)

REPLAY_CHILD = (
    """
import json, sys, time
started = time.perf_counter()
from visualizer.cli import main
rc = main(["--pickle-dir", {store!r}, "--port", "{port}", "--once", "--no-start-server", "--log-level", "WARNING"])
print(json.dumps({{"rc": rc, "seconds": time.perf_counter() - started,
                  "maxrss_mb": """
    + PEAK_MB
    + """}}))
"""
)

TENSORBOARD_CHILD = (
    """
import json, time
started = time.perf_counter()
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator({logdir!r}, size_guidance={{"scalars": 0}})  # 0: keep every point
acc.Reload()
points = sum(len(acc.Scalars(tag)) for tag in acc.Tags()["scalars"])
print(json.dumps({{"points": points, "seconds": time.perf_counter() - started,
                  "maxrss_mb": """
    + PEAK_MB
    + """}}))
"""
)


def replay(root: Path, endpoint: VisdomEndpoint) -> dict:
    from visualizer.visdom_client import VisdomClient

    store = root / "replay-1m" / "pickle"
    write_store(store)
    wall = time.perf_counter()
    ours = subprocess_json(REPLAY_CHILD.format(store=str(store), port=endpoint.port))
    ours["wall_seconds"] = time.perf_counter() - wall  # interpreter start included
    window = VisdomClient(endpoint).window_data("replay-1m", "train")
    last = REPLAY_POINTS // REPLAY_SERIES - 1
    traces = window["content"]["data"]
    raw = [t for t in traces if t.get("meta") != "smoothed"]  # each series' smoothed curve too
    ours["fully_displayed"] = all(t["x"][-1] == last for t in traces) and len(raw) == REPLAY_SERIES
    logdir = root / "tensorboard-1m"
    write_tensorboard(logdir)
    tb = subprocess_json(TENSORBOARD_CHILD.format(logdir=str(logdir)), timeout=1200)
    return {"ours": ours, "tb": tb}
