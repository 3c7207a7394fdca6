"""Many finished runs on disk, written with the store's own writer, and the same runs for
TensorBoard: what ``python -m bench many`` and the tests point a viewer, the Api and the
export at.

    write_runs(root, 10_000)          # root/run-00000/pickle/... , one store per run
    write_tensorboard_runs(tb, 1_000)  # tb/run-00000/events.out.tfevents...

Each run's shape comes from :func:`run_spec` (seeded by its index, so a reader can
check what was written): config options (lr, batch size, seed, optimizer) that a
runs table shows as columns, a final state (mostly finished, some failed or
stopped, which stop early) and loss curves whose best value differs per run.

The stores are written through the store's lower layers (``RunDocuments`` for
meta and status, ``encode_scalar_batch`` framed into a ``SegmentWriter``), the
code the Recorder's writer thread runs, minus the thread and the queue: a
Recorder per run (a writer thread started and joined, 3,000 ``log`` calls) wrote
59 runs a second on one core here, these layers about 170.
"""

from __future__ import annotations

import math
import os
import random
import socket
import time
from array import array
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from snapshot_store.format import frames as fmt
from snapshot_store.format.batches import SeriesColumns, encode_scalar_batch
from snapshot_store.write.documents import RunDocuments
from snapshot_store.write.segments import SegmentWriter

# (group, name) of each series, in order; past these, train/metric_N.
SERIES = (("train", "loss"), ("train", "accuracy"), ("val", "loss"))
LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
BATCH_SIZES = (16, 32, 64, 128)
OPTIMIZERS = ("adam", "sgd")
STEP_SECONDS = 0.5  # wall time between two logged steps
DAY = 86_400.0  # the runs start within the day before they are written
RUN_GAP = 60.0  # seconds between two runs' starts, closer where the day is too short
CHUNK = 50  # runs a worker writes per task: few tasks, yet an even spread over workers


@dataclass(frozen=True)
class RunSpec:
    """What one generated run holds."""

    name: str
    options: dict[str, Any]
    state: str  # finished, failed or stopped
    steps: int  # points per series: fewer than asked for a failed or stopped run
    total_steps: int  # the steps the run was meant to take
    series: tuple[tuple[str, str], ...]
    seed: int


def run_name(index: int) -> str:
    return f"run-{index:05d}"


def series_names(count: int) -> tuple[tuple[str, str], ...]:
    """(group, name) of ``count`` series."""
    extra = tuple(("train", f"metric_{i}") for i in range(len(SERIES), count))
    return (SERIES + extra)[:count]


def run_spec(index: int, series: int = 3, points: int = 1000) -> RunSpec:
    """Run ``index``'s options, state and length, the same on every call."""
    rng = random.Random(index)
    roll = rng.random()  # about 90% finished, 6% failed, 4% stopped
    state = "finished" if roll < 0.9 else "failed" if roll < 0.96 else "stopped"
    steps = points if state == "finished" else max(1, int(points * rng.uniform(0.1, 0.9)))
    options = {
        "lr": rng.choice(LRS),
        "batch_size": rng.choice(BATCH_SIZES),
        "optimizer": rng.choice(OPTIMIZERS),
        "seed": index,
    }
    return RunSpec(run_name(index), options, state, steps, points, series_names(series), index)


def series_columns(spec: RunSpec, started: float, float32: bool = False) -> list[SeriesColumns]:
    """The run's series as packed columns (int64 steps, float64 the rest), as the writer holds them;
    ``float32``: each value a float32 number, as a float32 tensor's ``.item()`` logs it."""
    rng = np.random.default_rng(spec.seed)
    steps = np.arange(spec.steps, dtype=np.int64)
    epochs = steps / 100.0
    walls = started + steps * STEP_SECONDS
    # Each run decays to its own floor at its own rate: "best" differs between runs.
    floor, rate = rng.uniform(0.05, 0.6), rng.uniform(2.0, 8.0) / max(spec.total_steps, 1)
    out: list[SeriesColumns] = []
    for i, (group, name) in enumerate(spec.series):
        curve = floor + (2.0 - floor) * np.exp(-rate * steps) + rng.normal(0, 0.02, spec.steps)
        values = 1.0 - curve / 2.0 if name == "accuracy" else curve + 0.1 * i
        if float32:
            values = values.astype(np.float32).astype(np.float64)
        out.append((group, name, *_packed(steps, epochs, walls, values)))
    return out


def _packed(*columns: np.ndarray) -> tuple[array, array, array, array]:
    """Typed arrays the encoder takes as they are (no per-item conversion)."""
    steps, epochs, walls, values = (
        array(code, np.ascontiguousarray(col, dtype=dtype).tobytes())
        for code, dtype, col in zip("qddd", ("<i8", "<f8", "<f8", "<f8"), columns, strict=True)
    )
    return steps, epochs, walls, values


def write_run(store: Path, spec: RunSpec, started: float, float32: bool = False) -> None:
    """One finished store: meta, one scalar segment, the final status with its summary
    (``float32``: values as a float32 tensor logs them, :func:`series_columns`)."""
    documents = RunDocuments(store, heartbeat_seconds=5.0)
    documents.open(spec.options, world_size=1, hosts=None)
    # The run started on the generator's clock, not when it was written: its status says so
    # (a table showed such runs started today and last updated a day ago).
    documents.started = documents.session_started = started
    documents.set_fields({"total_steps": spec.total_steps})
    columns = series_columns(spec, started, float32)
    documents.summary.add(columns)  # the run summary the writer thread keeps in status
    segments = SegmentWriter(store, fmt.SCALARS, max_bytes=1 << 20, max_age=math.inf)
    segments.append(encode_scalar_batch(columns))
    segments.close()
    last_wall = started + (spec.steps - 1) * STEP_SECONDS
    documents.saw_scalars(spec.steps - 1, last_wall)
    documents.end(spec.state)
    documents.write_status(last_wall, (spec.steps - 1) / 100.0, unwritten={})


def run_starts(runs: int, points: int, now: float) -> tuple[float, float]:
    """The first run's start and the gap between two runs' starts: a minute apart from a day
    ago, closer past 1,400 or so runs, so that every run ends before ``now`` (a run ending
    in the future would be a live one to the viewer, and sort above every new run)."""
    length = points * STEP_SECONDS
    gap = min(RUN_GAP, max(DAY - length - 60.0, 0.0) / max(runs, 1))
    return now - DAY, gap


def _write_chunk(
    root: str, indexes: list[int], series: int, points: int, clock: tuple[float, float]
) -> None:
    started, gap = clock
    for index in indexes:
        spec = run_spec(index, series, points)
        write_run(Path(root) / spec.name / "pickle", spec, started + index * gap)


def _in_workers(task: Callable[..., None], root: Path, runs: int, workers: int, *args: Any) -> None:
    """``task(root, indexes, *args)`` over every run index, in ``workers`` processes."""
    chunks = [list(range(i, min(runs, i + CHUNK))) for i in range(0, runs, CHUNK)]
    if workers <= 1 or len(chunks) <= 1:
        for chunk in chunks:
            task(str(root), chunk, *args)
        return
    # spawn, not fork: the caller may hold threads (a test runner, a server's client).
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        for done in pool.map(task, *zip(*((str(root), c, *args) for c in chunks), strict=True)):
            assert done is None


def write_runs(
    root: Path, runs: int, series: int = 3, points: int = 1000, workers: int = 2
) -> None:
    """Write ``runs`` finished stores ``root/run-NNNNN/pickle`` (see :func:`run_spec`)."""
    root.mkdir(parents=True, exist_ok=True)
    clock = run_starts(runs, points, time.time())
    _in_workers(_write_chunk, root, runs, workers, series, points, clock)


def _write_tb_chunk(
    root: str, indexes: list[int], series: int, points: int, clock: tuple[float, float]
) -> None:
    from tensorboard.compat.proto.event_pb2 import Event  # type: ignore[import-untyped]
    from tensorboard.compat.proto.summary_pb2 import Summary  # type: ignore[import-untyped]
    from tensorboard.summary.writer.record_writer import RecordWriter  # type: ignore[import-untyped]

    started, gap = clock
    for index in indexes:
        spec = run_spec(index, series, points)
        columns = series_columns(spec, started + index * gap)
        tags = [f"{group}/{name}" for group, name, *_ in columns]
        steps, _epochs, walls, _values = columns[0][2:]
        values = [column[5] for column in columns]
        # TensorBoard's record writer, called here rather than through EventFileWriter's
        # queue and thread, which tripled the time of these 3,000,000 small records.
        logdir = Path(root) / spec.name
        logdir.mkdir(parents=True)
        name = f"events.out.tfevents.{int(walls[0]):010d}.{socket.gethostname()}.{os.getpid()}.0"
        with (logdir / name).open("wb") as file:
            writer = RecordWriter(file)
            writer.write(
                Event(wall_time=walls[0], file_version="brain.Event:2").SerializeToString()
            )
            # One event a step holding every series (as one Summary may): a third of the
            # records, whose pure-Python checksums are most of the time.
            for i in range(spec.steps):
                summary = Summary(
                    value=[
                        Summary.Value(tag=tag, simple_value=v[i])
                        for tag, v in zip(tags, values, strict=True)
                    ]
                )
                event = Event(wall_time=walls[i], step=steps[i], summary=summary)
                writer.write(event.SerializeToString())


def write_tensorboard_runs(
    root: Path, runs: int, series: int = 3, points: int = 1000, workers: int = 2
) -> None:
    """The same runs as TensorBoard event files, ``root/run-NNNNN/events.out.tfevents.*``,
    written with TensorBoard's own record writer and protos (tag ``group/name``)."""
    root.mkdir(parents=True, exist_ok=True)
    clock = run_starts(runs, points, time.time())
    _in_workers(_write_tb_chunk, root, runs, workers, series, points, clock)
