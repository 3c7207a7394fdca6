"""Logging in a real training loop: step time and process CPU of each writer, every thread counted.

    python -m bench loop

A tiny MLP trains on CPU with one torch thread, sized so a step takes about
0.35 ms on a 2-core VM, so the logging's share of a step shows. Each step logs
the loss under ``n`` tags (2 and 20) with ``trainer.SummaryWriter.add_scalar``
(ours) or ``torch.utils.tensorboard.SummaryWriter.add_scalar`` (TensorBoard),
as one of two kinds:

* float: ``loss.item()`` read once a step, then logged. The loop has its float
  before it logs it, so the reference reads it too: a loop that calls
  ``loss.item()`` and logs nothing. What that read costs is its own row.
* tensor: the loss tensor itself (``add_scalar(tag, loss, step)``); reading it is
  the writer's work, so the reference is the bare loop.

Each logging run lies between two runs of its reference and is compared with
their mean (a shared machine's load drifts); a run lasts at least ten of our
flush intervals, so the writer thread's work falls inside it. Two neighbouring
reference runs give the measure's own noise. Step time is the loop's wall time;
CPU is ``time.process_time()`` (all threads) from the first step to the end of
``close()``. Ratios and per-scalar CPU are medians of per-round figures. With
CUDA, the same loop on the GPU logs CUDA tensors; without, one row says so.

One row then times a call on the training thread against its floor, in blocks
that alternate within one loop (see :mod:`bench.tools.call_cost`). A last pair of rows
times 200,000 ``add_scalar(float)`` calls in a row (no model): the foreground
cost per call while the writer thread runs, and the process CPU per scalar,
``close()`` included.

The CPU's runs are sized by count (at least 20,000 scalars a run); CUDA's by time, so
the GPU loop fits a lent GPU's minutes: each tag count's rounds within
``BENCH_LOOP_CUDA_SECONDS`` (120 s; at least 3 rounds), each run about 1.2 s.
``BENCH_LOOP_DEVICES=cuda`` measures the GPU loop alone, ``BENCH_LOOP_ROUNDS`` caps the
rounds (9).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.tools.call_cost import per_call, per_call_row

ROUNDS = int(os.environ.get("BENCH_LOOP_ROUNDS", "9"))
RUN_SECONDS = 1.2  # >= 10 flush intervals of 0.1 s
# Seconds of CUDA rounds for one tag count: both counts and the warm-ups in 5 minutes.
CUDA_SECONDS = float(os.environ.get("BENCH_LOOP_CUDA_SECONDS", "120"))
MIN_ROUNDS = 3  # a median needs three
# Each logging run logs at least this many scalars: at 2 tags a step a 1.2 s run logs
# 8,000, and the noise of its CPU per scalar (3 us) was larger than the figure itself.
MIN_SCALARS = 20_000
WIDTH, HIDDEN, CLASSES, BATCH = 256, 256, 10, 32  # about 0.35 ms a step, one thread
BURST_CALLS, TB_BURST_CALLS = 200_000, 20_000
TARGET_RATIO, TARGET_CPU_US = 1.01, 2.0

# A run's work after each optimizer step: log(writer, step, loss, tags).
Logger = Callable[[Any, int, Any, list[str]], None]


def _read_loss(writer: Any, step: int, loss: Any, tags: list[str]) -> None:
    loss.item()


def _log_float(writer: Any, step: int, loss: Any, tags: list[str]) -> None:
    value = loss.item()
    for tag in tags:
        writer.add_scalar(tag, value, step)


def _log_tensor(writer: Any, step: int, loss: Any, tags: list[str]) -> None:
    for tag in tags:
        writer.add_scalar(tag, loss, step)


# kind -> (its logger, its reference: a loop doing what the logging loop does but log).
KINDS: dict[str, tuple[Logger, Logger | None]] = {
    "tensor": (_log_tensor, None),
    "float": (_log_float, _read_loss),
}
READ_LOSS = "reading the loss"  # the results key of the loss.item() runs vs the bare loop


class Loop:
    """The model, its optimizer and one batch on ``device``; :meth:`run` trains ``steps``."""

    def __init__(self, device: str) -> None:
        import torch
        from torch import nn

        torch.manual_seed(0)
        self.torch = torch
        self.device = device
        self.model = nn.Sequential(
            nn.Linear(WIDTH, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)
        ).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.inputs = torch.randn(BATCH, WIDTH, device=device)
        self.targets = torch.randint(0, CLASSES, (BATCH,), device=device)

    def run(
        self, steps: int, log: Logger | None = None, writer: Any = None, tags: list[str] = ()
    ) -> tuple[float, float, float]:
        """Seconds of the steps: wall; process CPU, ``writer.close()`` included; and of
        that, the CPU of threads other than this one (the writer thread's)."""
        functional = self.torch.nn.functional
        self._sync()
        cpu0, wall0, own0 = time.process_time(), time.perf_counter(), time.thread_time()
        for step in range(steps):
            loss = functional.cross_entropy(self.model(self.inputs), self.targets)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            if log is not None:
                log(writer, step, loss, tags)
        self._sync()
        wall = time.perf_counter() - wall0
        if writer is not None:
            writer.close()
        cpu, own = time.process_time() - cpu0, time.thread_time() - own0
        return wall, cpu, cpu - own

    def _sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()


def _writers(root: Path) -> dict[str, Callable[[str], Any]]:
    """Makers of each writer, by name, for a run directory under ``root``."""
    from torch.utils.tensorboard import SummaryWriter as TBWriter

    from trainer import SummaryWriter

    return {
        "ours": lambda name: SummaryWriter(root / name),
        "TensorBoard": lambda name: TBWriter(str(root / name)),
    }


# Per variant, a tuple of figures for each round (see _loop_rounds).
Results = dict[str, list[tuple[float, ...]]]


def run_size(device: str, n: int, step_s: float, writers: int) -> tuple[int, int]:
    """Steps of each run and rounds of the loop at ``n`` tags: the CPU's by count (enough
    scalars for a steady CPU per scalar), CUDA's by time (:data:`CUDA_SECONDS`)."""
    if device != "cuda":
        return max(1000, int(RUN_SECONDS / step_s), MIN_SCALARS // n), ROUNDS
    steps = max(200, int(RUN_SECONDS / step_s))
    runs_a_round = len(KINDS) * (1 + 2 * writers)  # a reference, then a writer's run and one
    rounds = int(CUDA_SECONDS / (runs_a_round * steps * step_s))
    return steps, max(MIN_ROUNDS, min(ROUNDS, rounds))


def _loop_rounds(device: str, n: int, root: Path) -> tuple[Results, float]:
    """Per variant, (step-time ratio to its reference, extra process CPU s per scalar, the
    part of it on other threads than the training thread) of each round; and the bare
    loop's seconds per step.

    Every logging run lies between two runs of its kind's reference and is compared
    with their mean (drift cancels). "none" holds each reference run's ratio to the one
    before it, the noise of the measure itself; :data:`READ_LOSS`, the first run that
    reads the loss against the bare run before it.
    """
    loop = Loop(device)
    tags = [f"loss/{i}" for i in range(n)]
    loop.run(200)  # warm up
    wall = loop.run(400)[0]
    writers = _writers(root)
    steps, rounds = run_size(device, n, wall / 400, len(writers))
    results: Results = {"none": [], READ_LOSS: []}
    for round_ in range(rounds):
        bare = None
        for kind, (log, reference) in KINDS.items():
            before = loop.run(steps, reference)
            if bare is not None:
                results[READ_LOSS].append((before[0] / bare[0], (before[1] - bare[1]) / steps))
            for name, make in writers.items():
                writer = make(f"{device}-{n}-{kind}-{name}-{round_}")
                run = loop.run(steps, log, writer, tags)
                after = loop.run(steps, reference)
                base = [(b + a) / 2 for b, a in zip(before, after, strict=True)]
                scalars = steps * n
                results.setdefault(f"{name}, {kind}", []).append(
                    (run[0] / base[0], (run[1] - base[1]) / scalars, (run[2] - base[2]) / scalars)
                )
                results["none"].append((after[0] / before[0], (after[1] - before[1]) / scalars))
                before = after
            bare = before if reference is None else None
    return results, wall / 400


def _burst(root: Path) -> dict[str, list[tuple[float, float]]]:
    """Per writer, (foreground s per call, process CPU s per scalar) of each round."""
    results: dict[str, list[tuple[float, float]]] = {}
    for r in range(ROUNDS):
        for name, make in _writers(root).items():
            calls = BURST_CALLS if name == "ours" else TB_BURST_CALLS
            writer = make(f"burst-{name}-{r}")
            add_scalar = writer.add_scalar
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for step in range(calls):
                add_scalar("loss/train", 0.5, step)
            wall = time.perf_counter() - wall0
            writer.close()
            cpu = time.process_time() - cpu0
            results.setdefault(name, []).append((wall / calls, cpu / calls))
    return results


def _median(rounds: list[tuple[float, ...]], i: int) -> float:
    return statistics.median(figures[i] for figures in rounds)


def _verdict(ratio: float, cpu_us: float, noise: float, noise_cpu_us: float) -> bool | str:
    """Whether the 2-tag targets are met, or that this run's noise can not tell: two runs
    without logging differing by more than the margin the target leaves."""
    if noise >= TARGET_RATIO - 1 or noise_cpu_us >= TARGET_CPU_US:
        return f"not resolved: noise {noise:.3f}, {noise_cpu_us:.1f} us"
    return ratio <= TARGET_RATIO and cpu_us <= TARGET_CPU_US


def _loop_rows(device: str, n: int, results: Results, step_s: float) -> list[dict]:
    none = results["none"]
    noise = statistics.median(abs(r - 1) for r, _ in none)
    noise_cpu = statistics.median(abs(c) for _, c in none) * 1e6
    where = f"tiny MLP on {device} ({step_s * 1e3:.2f} ms a step)"
    read = results[READ_LOSS]
    rows = [
        {
            "benchmark": f"{where}, {n} tags: no logging vs no logging (the noise)",
            "ours": f"|ratio - 1| {noise:.3f}, |CPU| {noise_cpu:.1f} us (medians)",
            "reference": f"ratios {min(r for r, _ in none):.3f}-{max(r for r, _ in none):.3f}x",
        },
        {
            "benchmark": f"{where}: the loop reading its loss, loss.item() once a step "
            "(not logging)",
            "ours": f"{_median(read, 0):.3f}x, {_median(read, 1) * 1e6:.1f} us a step",
            "ratio": "vs the bare loop",
        },
    ]
    for kind in KINDS:
        ours, tb = results[f"ours, {kind}"], results[f"TensorBoard, {kind}"]
        ratio, cpu, writer_cpu = _median(ours, 0), _median(ours, 1) * 1e6, _median(ours, 2) * 1e6
        gated = device == "cpu" and n == 2
        rows.append(
            {
                "benchmark": f"{where}, {n} add_scalar({kind})/step: step time, extra CPU/scalar "
                "(of it, other threads')",
                "ours": f"{ratio:.3f}x, {cpu:.1f} us ({writer_cpu:.1f} us)",
                "reference": f"TensorBoard {_median(tb, 0):.3f}x, {_median(tb, 1) * 1e6:.0f} us",
                "ratio": "vs a loop reading the loss" if KINDS[kind][1] else "vs the bare loop",
                "target": f"<= {TARGET_RATIO}x, <= {TARGET_CPU_US:.0f} us" if gated else "",
                "met": _verdict(ratio, cpu, noise, noise_cpu) if gated else "",
            }
        )
    return rows


def _burst_rows(results: dict[str, list[tuple[float, float]]]) -> list[dict]:
    ours, tb = results["ours"], results["TensorBoard"]
    rows = []
    for i, what, target in ((0, "foreground/call", 1.5), (1, "process CPU/scalar", 2.0)):
        value, reference = _median(ours, i), _median(tb, i)
        rows.append(
            {
                "benchmark": f"{BURST_CALLS:,} add_scalar(float) in a row: {what}",
                "ours": f"{value * 1e6:.2f} us",
                "reference": f"TensorBoard {reference * 1e6:.1f} us ({TB_BURST_CALLS:,} calls)",
                "ratio": f"{reference / value:.0f}x cheaper",
                "target": f"<= {target} us",
                "met": value <= target * 1e-6,
            }
        )
    return rows


def _devices(cuda: bool) -> list[str]:
    """The loop's devices: ``$BENCH_LOOP_DEVICES`` (``cuda``, ``cpu,cuda``) where CUDA allows,
    else the CPU and CUDA where there is one."""
    asked = os.environ.get("BENCH_LOOP_DEVICES", "cpu,cuda").split(",")
    return [d for d in ("cpu", "cuda") if d in asked and (d == "cpu" or cuda)]


def run() -> list[dict]:
    """Rows: each writer's step-time ratio and CPU per scalar in the loop, and the burst."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    load = os.getloadavg()[0]
    rows: list[dict] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            devices = _devices(torch.cuda.is_available())
            for device in devices:
                for n in (2, 20):
                    rows += _loop_rows(device, n, *_loop_rounds(device, n, Path(tmp)))
            if "cuda" not in devices:
                rows.append(
                    {"benchmark": "tiny MLP on cuda, CUDA tensors", "ours": "skipped: no CUDA"}
                )
            if "cpu" in devices:  # the call's and the burst's costs are the CPU's
                loop = Loop("cpu")
                loop.run(200)  # warm up
                rows.append(per_call_row(per_call(loop)))
                rows += _burst_rows(_burst(Path(tmp)))
    finally:
        torch.set_num_threads(threads)
    rows.append(
        {
            "benchmark": f"  load average at the start {load:.1f}, end {os.getloadavg()[0]:.1f} "
            f"on {os.cpu_count()} CPUs"
        }
    )
    return rows
