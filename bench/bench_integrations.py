"""Framework loggers: cost per call on the training thread, beside the framework's TensorBoard logger.

Each pair runs in the same process, alternating in rounds (both writer threads
alive throughout); a row reports the medians over the rounds and their ratio.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

Call = Callable[[int], None]
TARGET_RATIO = 10.0


def _per_call(call: Call, n: int, start: int) -> float:
    started = time.perf_counter()
    for step in range(start, start + n):
        call(step)
    return (time.perf_counter() - started) / n


def _compare(ours: Call, reference: Call, n: int, rounds: int) -> tuple[float, float]:
    """Median seconds per call of ``ours`` and ``reference`` over alternating rounds."""
    mine, theirs = [], []
    for r in range(rounds):
        mine.append(_per_call(ours, n, r * n))
        theirs.append(_per_call(reference, n // 10, r * n))
    return statistics.median(mine), statistics.median(theirs)


def _lightning(root: Path) -> tuple[Call, Call, Callable[[], None]]:
    from lightning.pytorch.loggers import TensorBoardLogger

    from integrations.lightning import MonitorLogger

    ours, tb = MonitorLogger(root), TensorBoardLogger(root / "tb")
    metrics = {"train_loss": 0.5, "train_acc": 0.9, "val_loss": 0.6, "lr-SGD": 0.01}

    def close() -> None:
        ours.finalize("success")
        tb.finalize("success")

    return (
        lambda step: ours.log_metrics(metrics, step),
        lambda step: tb.log_metrics(metrics, step),
        close,
    )


def _transformers(root: Path) -> tuple[Call, Call, Callable[[], None]]:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.integrations import TensorBoardCallback

    from integrations.transformers import MonitorCallback

    args = TrainingArguments(output_dir=str(root / "hf"), report_to=[], use_cpu=True)
    state, control = TrainerState(), TrainerControl()
    ours, tb = MonitorCallback(), TensorBoardCallback(tb_writer=TorchWriter(str(root / "hf-tb")))
    ours.on_train_begin(args, state, control)
    logs = {"loss": 0.5, "grad_norm": 1.5, "learning_rate": 1e-4, "epoch": 0.5}

    def call(callback: MonitorCallback | TensorBoardCallback) -> Call:
        def on_log(step: int) -> None:
            state.global_step = step
            callback.on_log(args, state, control, logs=logs)

        return on_log

    def close() -> None:
        ours.on_train_end(args, state, control)
        tb.on_train_end(args, state, control)

    return call(ours), call(tb), close


def _accelerate(root: Path) -> tuple[Call, Call, Callable[[], None]]:
    from accelerate import Accelerator

    from integrations.accelerate import MonitorTracker

    ours = Accelerator(cpu=True, log_with=[MonitorTracker("bench", root / "acc")])
    tb = Accelerator(cpu=True, log_with="tensorboard", project_dir=str(root / "acc-tb"))
    for accelerator in (ours, tb):
        accelerator.init_trackers("bench", config={"lr": 0.01})
    values = {"train_loss": 0.5, "train_acc": 0.9, "val_loss": 0.6, "lr": 0.01}

    def close() -> None:
        ours.end_training()
        tb.end_training()

    return (
        lambda step: ours.log(values, step=step),
        lambda step: tb.log(values, step=step),
        close,
    )


CASES = {
    "Lightning log_metrics (4 scalars)": (_lightning, "TensorBoardLogger"),
    "HF TrainerCallback.on_log (4 values)": (_transformers, "TensorBoardCallback"),
    "accelerator.log (4 scalars)": (_accelerate, "Accelerate's tensorboard tracker"),
}


def run(calls: int = 5_000, rounds: int = 5) -> list[dict]:
    """Rows: per-call cost of each adapter beside the same framework's TensorBoard logger."""
    logging.getLogger("lightning").setLevel(logging.ERROR)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, (setup, reference) in CASES.items():
            ours, theirs, close = setup(Path(tmp) / label.split()[0])
            mine, ref = _compare(ours, theirs, calls, rounds)
            close()
            ratio = ref / mine
            rows.append(
                {
                    "benchmark": f"{label}, training thread",
                    "ours": f"{mine * 1e6:.1f} us",
                    "reference": f"{reference} {ref * 1e6:.0f} us",
                    "ratio": f"{ratio:.0f}x cheaper",
                    "target": f">= {TARGET_RATIO:.0f}x cheaper",
                    "met": ratio >= TARGET_RATIO,
                }
            )
    return rows
