"""Logging in a fast GPU loop: step time of a launch-bound MLP with each way of logging two scalars.

    python -m bench gpu

The model is small enough that a step (forward, backward, Adam) is bound by
kernel launches, about a millisecond on a current GPU, so any per-value launch or
synchronisation in the logging shows. Variants, each logging the loss and a
second scalar every step:

* none: no logging (the reference every ratio is taken to);
* TensorBoard ``add_scalar(loss.item())`` and ``add_scalar(loss)`` (a tensor);
* ours ``SummaryWriter.add_scalar(loss)``, ``Recorder.log`` of the tensors and of ``.item()``;
* floor: the tensors' references kept, one stack and copy at the end of the round.

Each round runs every variant for the same number of steps, in alternating order
(the load of a shared machine drifts); the ratios are medians of per-round ratios.
Without CUDA the suite prints one row, "skipped: no CUDA".
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WIDTH, DEPTH, BATCH = 256, 12, 64
STEPS, ROUNDS = 400, 5
TARGET = 1.01  # ours with tensors: at most 1% over no logging, and over the floor
OURS_WRITER = "ours SummaryWriter.add_scalar(loss)"
OURS_LOG = "ours Recorder.log(tensors)"
FLOOR = "floor (references, one copy per round)"


def _model(device: Any) -> tuple[Any, Any, Any]:
    import torch
    from torch import nn

    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(WIDTH, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    inputs = torch.randn(BATCH, WIDTH, device=device)
    return model, optimizer, inputs


class Loggers:
    """The variants' writers: ``variants`` maps a name to ``log(step, loss, second)``."""

    def __init__(self, root: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter as TBWriter

        from snapshot_store import Recorder
        from trainer import SummaryWriter

        self.tb = TBWriter(str(root / "tb"))
        self.writer = SummaryWriter(root / "ours-writer")
        self.recorder = Recorder(root / "ours-recorder", rank=0)
        self.kept: list[Any] = []  # the floor's references
        self.variants: dict[str, Callable[[int, Any, Any], None]] = {
            "none": lambda step, loss, second: None,
            "TensorBoard add_scalar(loss.item())": self.tb_item,
            "TensorBoard add_scalar(loss)": self.tb_tensor,
            OURS_WRITER: self.ours_writer,
            OURS_LOG: lambda step, loss, second: self.recorder.log(
                {"loss": loss, "second": second}, step
            ),
            "ours Recorder.log(.item())": lambda step, loss, second: self.recorder.log(
                {"loss": loss.item(), "second": second.item()}, step
            ),
            FLOOR: lambda step, loss, second: self.kept.append((loss.detach(), second)),
        }

    def tb_item(self, step: int, loss: Any, second: Any) -> None:
        self.tb.add_scalar("train/loss", loss.item(), step)
        self.tb.add_scalar("train/second", second.item(), step)

    def tb_tensor(self, step: int, loss: Any, second: Any) -> None:
        self.tb.add_scalar("train/loss", loss, step)
        self.tb.add_scalar("train/second", second, step)

    def ours_writer(self, step: int, loss: Any, second: Any) -> None:
        self.writer.add_scalar("train/loss", loss, step)
        self.writer.add_scalar("train/second", second, step)

    def close(self) -> None:
        self.tb.close()
        self.writer.close()
        self.recorder.close()


def _round(model, optimizer, inputs, log: Callable, kept: list, sync: Callable) -> float:
    """Seconds per step of ``STEPS`` steps logging through ``log``."""
    import torch

    sync()
    started = time.perf_counter()
    for step in range(STEPS):
        out = model(inputs)
        loss = out.square().mean()
        second = out.detach().abs().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        log(step, loss, second)
    if kept:  # the floor's one copy
        torch.stack([v for pair in kept for v in pair]).cpu()
        kept.clear()
    sync()
    return (time.perf_counter() - started) / STEPS


def measure(device: Any) -> tuple[float, dict[str, float]]:
    """(no-logging seconds per step, variant -> median per-round ratio to no logging)."""
    import torch

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model, optimizer, inputs = _model(device)
    with tempfile.TemporaryDirectory() as tmp:
        loggers = Loggers(Path(tmp))
        variants, kept = loggers.variants, loggers.kept
        for log in variants.values():  # warm up every path (allocator, writer threads, files)
            _round(model, optimizer, inputs, log, kept, sync)
        times: dict[str, list[float]] = {name: [] for name in variants}
        for r in range(ROUNDS):
            for name in list(variants) if r % 2 == 0 else reversed(variants):
                times[name].append(_round(model, optimizer, inputs, variants[name], kept, sync))
        loggers.close()
    base = times["none"]
    ratios = {
        name: statistics.median(t / b for t, b in zip(ts, base, strict=True))
        for name, ts in times.items()
        if name != "none"
    }
    return statistics.median(base), ratios


def run(device: str = "cuda") -> list[dict]:
    """Rows: each variant's step time as a ratio to no logging (one 'skipped' row without CUDA)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        return [{"benchmark": "GPU loop logging overhead", "ours": "skipped: no CUDA"}]
    base, ratios = measure(torch.device(device))
    floor = ratios[FLOOR]
    rows = []
    for name, ratio in ratios.items():
        row = {
            "benchmark": f"{device} MLP step, {name}",
            "ours": f"{ratio:.3f}x",
            "reference": f"no logging {base * 1e3:.3f} ms/step",
            "ratio": f"{ratio / floor:.3f}x floor",
        }
        if name in (OURS_LOG, OURS_WRITER):
            row["target"] = f"<= {TARGET}x, <= {TARGET}x floor"
            row["met"] = ratio <= TARGET and ratio / floor <= TARGET
        rows.append(row)
    return rows
