"""Runs as data (``from remote_train_monitor import Api``): a sweep listed, a long history read
into pandas beside TensorBoard's EventAccumulator on the same points, a sweep to Parquet.

    python -m bench api

* 10,000 runs (3 series x 1,000 points, workloads/many_runs.py) listed with their config and
  summary: only each run's meta and status documents are read;
* one run of 1,000,000 points (one series) into a DataFrame with ``run.history()``; the
  reference reads the same points, written as TensorBoard event files with TensorBoard's
  own writer, with its ``EventAccumulator`` (every scalar kept) into the same DataFrame;
* 1,000 of those runs (3,000,000 points) exported to one Parquet file; the reference is
  the CSV export of the same runs;
* 100,000 runs listed, in a process of their own (its peak RSS is the listing's): the first
  time, then again from the cache of run documents (visualizer/api/summary_cache.py). The
  runs are written once and kept (bench/tools/kept_runs.py).

Times are wall clock, the best of a few rounds where a round is short; the CPU seconds of
the process (every thread) come beside them: on a shared machine they move less.
``BENCH_API_RUNS`` (default 10,000), ``BENCH_API_POINTS`` (1,000,000) and
``BENCH_API_BIG_RUNS`` (100,000; 0 leaves those rows out) scale it down.
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from bench.tools.kept_runs import kept_runs
from visualizer.api import Api
from visualizer.api.read_pool import MIN_RUNS
from visualizer.sources.export import export
from workloads.many_runs import write_runs, write_tensorboard_runs

LIST_TARGET_S, HISTORY_TARGET_S, PARQUET_TARGET_S = 3.0, 1.0, 5.0
BIG_TARGET_S, BIG_TARGET_MB = 10.0, 500.0
# One listing in a process of its own: wall seconds, CPU seconds (its workers' too: see
# visualizer/api/read_pool.py), runs listed, its peak RSS in MB (a worker's, some 45 MB,
# is not told: RUSAGE_CHILDREN's counts the pages a child shared with it when forked). The
# peak is the process' own memory's high-water mark (VmHWM): its ru_maxrss keeps the peak of
# the process it was started from (the bench, 583 MB after the 1,000,000-point history).
_LIST_ALONE = """
import json, resource, sys, time
from visualizer.api import Api
def peak_mb():
    try:
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def cpu():
    return sum(resource.getrusage(who)[0] + resource.getrusage(who)[1]
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
wall, began = time.perf_counter(), cpu()
runs = Api().runs(sys.argv[1])
wall, used = time.perf_counter() - wall, cpu() - began
assert runs[-1].summary and runs[-1].config
print(json.dumps([wall, used, len(runs), peak_mb()]))
"""
EXPORTED_RUNS = 1000


def _cpu() -> float:
    """CPU seconds of this process and of its children ended so far (a listing's workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _timed(task: Callable[[], Any], rounds: int = 1) -> tuple[float, float, Any]:
    """The best wall and CPU seconds of ``rounds`` calls of ``task``, and its last result."""
    best_wall, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), _cpu()
        result = task()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, _cpu() - cpu)
    return best_wall, best_cpu, result


def _row(name: str, wall: float, cpu: float, target: float, **cells: Any) -> dict:
    return {
        "benchmark": name,
        "ours": f"{wall:.2f} s ({cpu:.2f} s CPU)",
        "target": f"<= {target:g} s",
        "met": wall <= target,
        **cells,
    }


def _tensorboard_frame(logdir: Path, tag: str) -> Any:
    """TensorBoard's way: EventAccumulator keeping every scalar, then the same DataFrame."""
    import pandas as pd
    from tensorboard.backend.event_processing import event_accumulator as ea

    accumulator = ea.EventAccumulator(str(logdir), size_guidance={ea.SCALARS: 0})
    accumulator.Reload()
    events = accumulator.Scalars(tag)
    return pd.DataFrame(
        {
            "_step": [e.step for e in events],
            tag: [e.value for e in events],
            "_timestamp": [e.wall_time for e in events],
        }
    )


def _history_rows(root: Path, points: int) -> list[dict]:
    write_runs(root / "long", 1, series=1, points=points, workers=1)
    write_tensorboard_runs(root / "long-tb", 1, series=1, points=points, workers=1)
    run = Api().run(str(root / "long" / "run-00000"))
    wall, cpu, frame = _timed(run.history, rounds=3)
    ref_wall, _ref_cpu, ref = _timed(
        lambda: _tensorboard_frame(root / "long-tb" / "run-00000", "train/loss")
    )
    assert len(frame) == len(ref) == points, (len(frame), len(ref))
    name = f"one run's {points:,}-point history -> pandas DataFrame (run.history())"
    ratio = f"{ref_wall / wall:.0f}x faster"
    reference = f"TensorBoard EventAccumulator, same points: {ref_wall:.2f} s"
    return [_row(name, wall, cpu, HISTORY_TARGET_S, reference=reference, ratio=ratio)]


def _sweep_rows(root: Path, runs: int) -> list[dict]:
    write_runs(root / "sweep", runs)
    wall, cpu, listed = _timed(lambda: Api().runs(str(root / "sweep")))
    assert len(listed) == runs and all(run.summary for run in listed)
    name = f"Api().runs(): {runs:,} runs listed with config and summary"
    rows = [_row(name, wall, cpu, LIST_TARGET_S, reference="", ratio="")]
    exported = min(runs, EXPORTED_RUNS)
    # A directory of the first 1,000 runs, copied: the viewer follows no link out of its root.
    part = root / "part"
    for index in range(exported):
        name = f"run-{index:05d}"
        shutil.copytree(root / "sweep" / name, part / name)
    wall, cpu, written = _timed(lambda: export(str(part), io.BytesIO(), fmt="parquet"), rounds=2)
    ref_wall, _ref_cpu, _ = _timed(lambda: export(str(part), io.StringIO()))
    name = f"export of {exported:,} runs ({written:,} points) to one Parquet file"
    reference = f"the CSV export of the same runs: {ref_wall:.2f} s"
    rows.append(_row(name, wall, cpu, PARQUET_TARGET_S, reference=reference,
                     ratio=f"{ref_wall / wall:.1f}x faster"))  # fmt: skip
    return rows


def _listed_alone(folder: Path, cache: Path) -> tuple[float, float, int, float]:
    """Api().runs(folder) in a new process whose cache is ``cache``: its wall and CPU seconds
    (its workers' too), the runs listed and the process' peak RSS (MB)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _LIST_ALONE, str(folder)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall, cpu, listed, peak_mb = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu, listed, peak_mb


def _big_rows(root: Path, runs: int) -> list[dict]:
    """``runs`` kept runs listed by new processes: with no cache, then with the first's."""
    folder, _took = kept_runs(runs)
    rows = []
    for when in ("the first time (no cache)", "again (their documents from the cache)"):
        wall, cpu, listed, peak_mb = _listed_alone(folder, root / "cache")
        assert listed == runs, (listed, runs)
        row = _row(f"Api().runs(): {runs:,} runs listed {when}", wall, cpu, BIG_TARGET_S)
        row["ours"] += f", peak RSS {peak_mb:.0f} MB"
        if when.endswith("(no cache)") and runs >= MIN_RUNS:  # see _LIST_ALONE
            row["ours"] += " (the listing's process; its worker processes about 45 MB each)"
        row["target"] += f" and <= {BIG_TARGET_MB:.0f} MB"
        row["met"] = wall <= BIG_TARGET_S and peak_mb <= BIG_TARGET_MB
        rows.append({**row, "reference": "", "ratio": ""})
    return rows


def run() -> list[dict]:
    """The suite's rows (see the module)."""
    runs = int(os.environ.get("BENCH_API_RUNS", "10000"))
    points = int(os.environ.get("BENCH_API_POINTS", "1000000"))
    big = int(os.environ.get("BENCH_API_BIG_RUNS", "100000"))
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        root = Path(tmp)
        with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": str(root / "user-cache")}):
            rows = _sweep_rows(root, runs) + _history_rows(root, points)  # the first listing
        return rows + (_big_rows(root, big) if big else [])
