"""What one ``add_scalar`` costs the training thread inside a training loop, beside its floor.

Part of ``python -m bench loop``. Whole runs (bench_loop.py) drift against each
other by about 1% on a shared VM, more than a microsecond a call. Here blocks of
:data:`BLOCK_STEPS` steps (about 35 ms) alternate in one loop between no logging,
ours and the floor, so drift cancels and a tenth of a microsecond shows. Every
block reads ``loss.item()`` and two variants log it under two tags:

* ours: ``trainer.SummaryWriter.add_scalar``, its writer thread idle until the
  end (its flush interval is longer than the run), so only the training thread's
  own work differs from no logging; the writer thread's share is in the loop rows;
* the floor: :class:`Floor`, the least a Python drop-in does per call (read the
  clock, keep the value in a list), writing nothing.

The figure is the training thread's CPU per call (``time.thread_time``) over no
logging, median over blocks.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

BLOCK_STEPS, BLOCKS = 100, 200
CALLS = 2  # a step logs two tags, two calls written out as a loop's code has them
_clock = time.time


class Floor:
    """The least a Python drop-in does per call: read the clock and keep the value (a
    tensor is read) in a list. It writes nothing, so what it costs is a floor."""

    def __init__(self) -> None:
        self.kept: list[tuple[str, float, int, float]] = []
        self._keep = self.kept.append

    def add_scalar(self, tag: str, value: Any, step: int) -> None:
        self._keep((tag, value if type(value) is float else value.item(), step, _clock()))


def _block(loop: Any, add_scalar: Any, first_step: int) -> float:
    """Training-thread CPU seconds per step of one block, logging with ``add_scalar`` (or not)."""
    functional, model, optimizer = loop.torch.nn.functional, loop.model, loop.optimizer
    started = time.thread_time()
    for step in range(first_step, first_step + BLOCK_STEPS):
        loss = functional.cross_entropy(model(loop.inputs), loop.targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        value = loss.item()
        if add_scalar is not None:
            add_scalar("loss/train", value, step)
            add_scalar("loss/smooth", value, step)
    return (time.thread_time() - started) / BLOCK_STEPS


def per_call(loop: Any) -> dict[str, float]:
    """Training-thread seconds per ``add_scalar(float)`` over no logging, ours and the
    floor's; and per step without logging ("step")."""
    from trainer import SummaryWriter

    with tempfile.TemporaryDirectory() as tmp:
        ours = SummaryWriter(Path(tmp) / "calls", flush_interval=3600.0)
        variants = {"none": None, "ours": ours.add_scalar, "floor": Floor().add_scalar}
        blocks: dict[str, list[float]] = {name: [] for name in variants}
        step = 0
        for round_ in range(BLOCKS + 5):
            for name, add_scalar in variants.items():
                seconds = _block(loop, add_scalar, step)
                step += BLOCK_STEPS
                if round_ >= 5:  # the first rounds warm every variant up
                    blocks[name].append(seconds)
        ours.close()
    none = statistics.median(blocks["none"])
    costs = {name: (statistics.median(blocks[name]) - none) / CALLS for name in ("ours", "floor")}
    return {**costs, "step": none}


def per_call_row(costs: dict[str, float]) -> dict:
    ours, floor, step_s = costs["ours"], costs["floor"], costs["step"]
    return {
        "benchmark": f"tiny MLP on cpu ({step_s * 1e3:.2f} ms a step), 2 add_scalar(float)/step: "
        f"training thread's CPU per call, blocks of {BLOCK_STEPS} steps alternating",
        "ours": f"{ours * 1e6:.2f} us (writer thread idle)",
        "reference": f"floor {floor * 1e6:.2f} us (a method that reads the clock and keeps "
        "the value in a list)",
        "ratio": f"{ours / floor:.1f}x the floor" if floor > 0 else "",
    }
