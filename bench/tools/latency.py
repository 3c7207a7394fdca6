"""Log-to-visible latency: ``log()`` in a trainer process -> sent to visdom -> visible in visdom.

A trainer process logs four losses at a fixed rate after a long history; the
follower runs in this process and reports each send, and an independent observer
polls visdom for what the window holds.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.tools.replay import ROOT
from snapshot_store.read.store_reader import read_store
from visualizer.server.endpoint import VisdomEndpoint

LATENCY_SECONDS = 10.0
LATENCY_RATE_HZ = 50
LATENCY_PREFILL_STEPS = 50_000  # four losses already this long: windows at --max-points
KEY = ("train", "loss_0")

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


def _observe(endpoint: VisdomEndpoint, visible_at: list, stop: threading.Event) -> None:
    """Visdom's own answer to "what does the window hold", every 20 ms, until ``stop``.

    Decimation keeps the last point, so the last x is the newest step shown.
    """
    from visualizer.visdom_client import VisdomClient

    viewer = VisdomClient(endpoint)
    while not stop.is_set():
        try:
            traces = viewer.window_data("latency", "train")["content"]["data"]
            last = next(t["x"][-1] for t in traces if t["name"] == "loss_0")
            if not visible_at or last > visible_at[-1][0]:
                visible_at.append((last, time.time()))
        except Exception:
            pass  # window not there yet
        time.sleep(0.02)


def _run_trainer(store: Path) -> None:
    args = (LATENCY_SECONDS, LATENCY_RATE_HZ, LATENCY_PREFILL_STEPS)
    subprocess.run(
        [sys.executable, "-c", _TRAINER, str(store), *map(str, args)],
        cwd=ROOT,
        check=True,
        timeout=LATENCY_SECONDS + 120,
    )


def _delays(
    steps: list[int], logged_at: list[float], events: list[tuple[int, float]]
) -> list[float]:
    """Seconds from each live step's log to the first event that covers it."""
    out = []
    for step, wall in zip(steps, logged_at, strict=True):
        if step >= LATENCY_PREFILL_STEPS:
            first = next((t for s, t in events if s >= step), None)
            if first is not None:
                out.append(first - wall)
    return out


def measure_latency(root: Path, endpoint: VisdomEndpoint) -> dict:
    """Per live step: seconds until sent to visdom, and until visible there."""
    from visualizer.follower import Follower
    from visualizer.visdom_client import VisdomClient

    store = root / "latency" / "pickle"
    sent_at: list[tuple[int, float]] = []  # (last step on the server, when the POST returned)

    def on_sent(run: str, steps: dict, when: float) -> None:
        if KEY in steps and (not sent_at or steps[KEY] > sent_at[-1][0]):
            sent_at.append((steps[KEY], when))

    follower = Follower(str(store), VisdomClient(endpoint), on_sent=on_sent)
    thread = threading.Thread(target=follower.run, daemon=True)
    thread.start()
    visible_at: list[tuple[int, float]] = []
    stop = threading.Event()
    observer = threading.Thread(target=_observe, args=(endpoint, visible_at, stop), daemon=True)
    observer.start()
    _run_trainer(store)
    time.sleep(1.5)
    stop.set()
    follower.stop()
    thread.join(10)
    observer.join(10)

    history, _, _ = read_store(store)
    steps, _, logged_at, _ = history.series(KEY)
    window = VisdomClient(endpoint).window_data("latency", "train")["content"]["data"]
    live = sum(1 for s in steps if s >= LATENCY_PREFILL_STEPS)
    visible = _delays(steps, logged_at, visible_at)
    return {
        "points": live,
        "sent": _delays(steps, logged_at, sent_at),
        "visible": visible,
        "all_visible": len(visible) == live and all(len(t["x"]) <= 2000 for t in window),
    }
