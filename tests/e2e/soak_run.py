"""A training-like run for the soak test: every record kind the viewer draws, for a set time.

``python -m tests.e2e.soak_run STORE SECONDS`` opens the store, waits for a file
``STORE/../go`` (a page is opened on the run before its first point), then logs through the drop-in
``SummaryWriter`` (steps every few ms): a loss each step, a sparse validation
loss, a learning rate, a metric group that appears halfway, images, histograms,
text, hparams, and the trainer's system-metrics sampler. Its last step logs every
scalar series, and it writes ``STORE/../soak.json`` (the last steps) once closed.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from trainer import SummaryWriter
from trainer.training.system_metrics import SYSTEM_GROUP, StepTimer, SystemMetrics

STEP_S = 0.01
IMAGE_EVERY = 10
VAL_EVERY = 100
HISTOGRAM_EVERY = 50
TEXT_EVERY = 500


def _image(step: int) -> np.ndarray:
    """A 3x32x32 image that changes with the step."""
    ramp = np.linspace(0, 1, 32, dtype=np.float32)
    return np.stack([np.outer(ramp, ramp) * ((step // IMAGE_EVERY) % 7) / 6] * 3)


def _log_step(writer: SummaryWriter, step: int, late: bool, last: bool) -> None:
    loss = 2.0 / (1 + step / 200) + 0.05 * math.sin(step)
    writer.add_scalar("loss", loss, step)
    writer.add_scalar("lr/learning_rate", 0.1 * 0.999 ** (step // 10), step)
    if step % VAL_EVERY == 0 or last:
        writer.add_scalar("val/loss", loss * 1.1, step)
    if late or last:
        writer.add_scalar("metrics/accuracy", 1 - loss / 3, step)
    if step % IMAGE_EVERY == 0 or last:
        writer.add_image("predictions", _image(step), step)
    if step % HISTOGRAM_EVERY == 0 or last:
        writer.add_histogram("weights", torch.randn(256) * (1 + step / 1000), step)
    if step % TEXT_EVERY == 0 or last:
        writer.add_text("notes", f"step {step}: loss {loss:.3f}", step)


def main(store: Path, seconds: float) -> None:
    writer = SummaryWriter(store, options={"lr": 0.1, "seconds": seconds}, flush_interval=0.1)
    go = store.parent / "go"
    while not go.exists():
        time.sleep(0.05)
    timer = StepTimer()
    system = SystemMetrics(writer.recorder, 1.0, timer, torch.device("cpu")).start()
    started, step = time.monotonic(), 0
    while True:
        last = time.monotonic() - started >= seconds
        timer.start(step)
        timer.arrived()
        _log_step(writer, step, late=time.monotonic() - started >= seconds / 2, last=last)
        timer.done()
        if last:
            break
        time.sleep(STEP_S)
        step += 1
    system.stop()
    writer.recorder.log(
        system.sample(), step=step, group=SYSTEM_GROUP
    )  # every series ends at `step`
    writer.add_hparams({"lr": 0.1}, {"hparam/loss": 0.5})
    writer.close()
    last_image = step
    (store.parent / "soak.json").write_text(json.dumps({"step": step, "image": last_image}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), float(sys.argv[2]))
