"""Snapshot store: cost of ``log`` on the training thread and reading speed, beside TensorBoard."""

from __future__ import annotations

import gc
import tempfile
import time
from pathlib import Path

from snapshot_store import Recorder, read_store


def _log_cost_ours(root: Path, n: int) -> float:
    """Seconds per scalar for back-to-back ``log`` calls, the writer thread running."""
    rec = Recorder(root / "ours" / "pickle", rank=0)
    started = time.perf_counter()
    for step in range(n):
        rec.log({"loss": 0.5}, step=step)
    elapsed = time.perf_counter() - started
    rec.close()
    return elapsed / n


def _log_cost_tensorboard(root: Path, n: int) -> float:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(root / "tb-cost"))
    started = time.perf_counter()
    for step in range(n):
        writer.add_scalar("loss", 0.5, step)
    elapsed = time.perf_counter() - started
    writer.close()
    return elapsed / n


def _write_points(store: Path, points: int, series: int = 4) -> None:
    with Recorder(store, rank=0) as rec:
        for step in range(points // series):
            rec.log({f"loss_{i}": step * 0.001 + i for i in range(series)}, step=step)


def _read_rate_ours(store: Path) -> tuple[float, int]:
    gc.collect()
    started = time.perf_counter()
    history, _, _ = read_store(store)
    total = sum(len(steps) for steps, *_ in map(history.series, history.keys()))
    return total / (time.perf_counter() - started), total


def _read_rate_tensorboard(root: Path, points: int, series: int = 4) -> tuple[float, int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    logdir = root / "tb-read"
    writer = SummaryWriter(str(logdir))
    for step in range(points // series):
        for i in range(series):
            writer.add_scalar(f"loss_{i}", step * 0.001 + i, step)
    writer.close()
    started = time.perf_counter()
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    total = sum(len(acc.Scalars(tag)) for tag in acc.Tags()["scalars"])
    return total / (time.perf_counter() - started), total


def run(
    log_calls: int = 200_000, read_points: int = 1_000_000, tb_points: int = 100_000
) -> list[dict]:
    """Rows: log cost and read speed, ours beside TensorBoard's writer and EventAccumulator."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ours_log = _log_cost_ours(root, log_calls)
        tb_log = _log_cost_tensorboard(root, log_calls // 10)
        store = root / "read" / "pickle"
        _write_points(store, read_points)
        ours_rate, ours_n = _read_rate_ours(store)
        tb_rate, tb_n = _read_rate_tensorboard(root, tb_points)
    return [
        {
            "benchmark": "log() per scalar, training thread",
            "ours": f"{ours_log * 1e6:.2f} us",
            "reference": f"TensorBoard add_scalar {tb_log * 1e6:.1f} us",
            "ratio": f"{tb_log / ours_log:.0f}x cheaper",
            "target": "<= 3 us and >= 25x cheaper",
            "met": ours_log <= 3e-6 and tb_log / ours_log >= 25,
        },
        {
            "benchmark": f"read whole store ({ours_n:,} points; TB {tb_n:,})",
            "ours": f"{ours_rate:,.0f} points/s",
            "reference": f"EventAccumulator {tb_rate:,.0f} points/s",
            "ratio": f"{ours_rate / tb_rate:.0f}x faster",
            "target": ">= 1,000,000 points/s",
            "met": ours_rate >= 1_000_000,
        },
    ]
