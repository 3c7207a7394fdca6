"""Runs still training, in a bucket: each a store written by the store's own Recorder, one
step every :data:`STEP_S` s, its changed files put in the bucket after every step, as a
``--remote-transfer-cmd`` hook puts them. When each step's point was in the bucket is kept,
so a reader can time how long the viewer takes to show it.

    with LiveRuns(client, "bench", "runs", Path("/tmp/live")) as live:
        live.add("live-00")
        ...
        live.uploaded("live-00")   # {step: perf_counter() once its files were put}
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

from snapshot_store import Recorder

STEP_S = 0.5  # a step of a live run: a point of train/loss every half second


class LiveRuns:
    """Threads, one a run, each logging a step and putting what changed in the bucket."""

    def __init__(self, client: Any, bucket: str, prefix: str, local: Path) -> None:
        self.client, self.bucket, self.prefix, self.local = client, bucket, prefix, local
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._uploaded: dict[str, dict[int, float]] = {}
        self._lock = threading.Lock()

    def add(self, name: str) -> None:
        """Start run ``name``: its first files are in the bucket once ``uploaded(name)`` has
        step 0."""
        with self._lock:
            self._uploaded[name] = {}
        thread = threading.Thread(target=self._train, args=(name,), daemon=True)
        thread.start()
        self._threads.append(thread)

    def uploaded(self, name: str) -> dict[int, float]:
        """Step -> when the files holding its point were all in the bucket (perf_counter)."""
        with self._lock:
            return dict(self._uploaded[name])

    def _train(self, name: str) -> None:
        store = self.local / name / "pickle"
        sent: dict[str, tuple[int, int]] = {}  # file -> (size, mtime_ns) last put
        with Recorder(store, options={"lr": 1e-3, "seed": 0, "live": True}) as rec:
            step = 0
            while not self._stop.is_set():
                rec.log({"loss": math.exp(-step / 200.0)}, step=step)
                rec.flush()
                self._put_changed(name, store, sent)
                with self._lock:
                    self._uploaded[name][step] = time.perf_counter()
                step += 1
                self._stop.wait(STEP_S)
        self._put_changed(name, store, sent)  # the run's end: its status says finished

    def _put_changed(self, name: str, store: Path, sent: dict[str, tuple[int, int]]) -> None:
        for path in sorted(store.glob("*.pickle")):  # the store's files, not its lock
            stat = path.stat()
            if sent.get(path.name) == (stat.st_size, stat.st_mtime_ns):
                continue
            key = f"{self.prefix}/{name}/pickle/{path.name}"
            self.client.put_object(Bucket=self.bucket, Key=key, Body=path.read_bytes())
            sent[path.name] = (stat.st_size, stat.st_mtime_ns)

    def __enter__(self) -> LiveRuns:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)
