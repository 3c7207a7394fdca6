"""trainer.SummaryWriter: a TensorBoard script switches by changing one import."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from snapshot_store import read_store
from snapshot_store.images import decode_png
from tests.trainer.helpers import clean_env
from trainer import SummaryWriter


def test_scalar_and_image_methods_write_the_store_in_log_dir(tmp_path):
    with SummaryWriter(log_dir=tmp_path / "tb") as writer:
        for step in range(3):
            writer.add_scalar("Loss/train", torch.tensor(1.0 / (step + 1)), step)
            writer.add_scalar("accuracy", 0.5 + step / 10, global_step=step)
            writer.add_scalars("Loss", {"val": 2.0, "test": 3.0}, step)
        writer.add_image("sample", torch.ones(3, 4, 5), 2)
        writer.add_images("batch", np.zeros((4, 8, 8, 3), np.uint8), 2, dataformats="NHWC")
        writer.flush()
        assert writer.get_logdir() == str(tmp_path / "tb")
    history, reader, update = read_store(tmp_path / "tb")
    assert set(history.keys()) == {
        ("Loss", "train"),
        ("scalars", "accuracy"),
        ("Loss", "val"),
        ("Loss", "test"),
    }
    steps, _, _, values = history.series(("Loss", "train"))
    assert steps == [0, 1, 2] and values == [1.0, 0.5, float(torch.tensor(1 / 3))]
    assert history.series(("scalars", "accuracy"))[3] == [0.5, 0.6, 0.7]
    sample, batch = (decode_png(img[5]) for img in update.images)
    assert sample.shape == (4, 5, 3) and (sample == 255).all()
    assert batch.shape == (2 * 8 + 3 * 2, 2 * 8 + 3 * 2, 3)
    assert update.status["state"] == "finished" and reader.warnings == []


def _tensorboard_scalars(log_dir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    events.Reload()
    return [e.step for e in events.Scalars(tag)], [e.value for e in events.Scalars(tag)]


def test_add_scalar_of_cpu_tensors_records_the_value_at_the_call_as_tensorboard(tmp_path, caplog):
    from torch.utils.tensorboard import SummaryWriter as TBWriter

    loss = torch.tensor(2.0)
    with SummaryWriter(tmp_path / "ours", flush_secs=60) as ours, TBWriter(tmp_path / "tb") as tb:
        for writer in (ours, tb):
            writer.add_scalar("Loss/train", 1.5)  # step 0, as TensorBoard's event without a step
            writer.add_scalar("Loss/train", loss, np.int64(3))
        loss.mul_(10)  # changed in place after add_scalar: the values logged stay 2.0
        for writer in (ours, tb):
            writer.add_scalar("Loss/train", loss, 4)
        loss.zero_()
    steps, _, _, values = read_store(tmp_path / "ours")[0].series(("Loss", "train"))
    assert (steps, values) == ([0, 3, 4], [1.5, 2.0, 20.0])
    assert (steps, values) == _tensorboard_scalars(tmp_path / "tb", "Loss/train")
    assert "changed in place" not in caplog.text


def test_exception_inside_the_context_marks_the_run_failed(tmp_path):
    try:
        with SummaryWriter(tmp_path) as writer:
            writer.add_scalar("loss", 1.0, 0)
            raise RuntimeError("diverged")
    except RuntimeError:
        pass
    assert read_store(tmp_path)[2].status["state"] == "failed"


UNCLOSED = """
import sys
from trainer import SummaryWriter

writer = SummaryWriter(sys.argv[1])
writer.add_scalar("loss", 1.0, 0)
if sys.argv[2] == "crash":
    raise RuntimeError("diverged")
"""


@pytest.mark.integration
@pytest.mark.parametrize("ending, state", [("exit", "finished"), ("crash", "failed")])
def test_a_writer_left_open_is_closed_when_the_program_ends(tmp_path, ending, state):
    script = tmp_path / "unclosed.py"
    script.write_text(UNCLOSED)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run"), ending],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == (0 if ending == "exit" else 1), proc.stderr
    history, reader, update = read_store(tmp_path / "run")
    assert update.status["state"] == state and history.series(("scalars", "loss"))[3] == [1.0]
