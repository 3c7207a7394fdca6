"""The Accelerate tracker with real Accelerate: beside TensorBoard's tracker, and under torchrun."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from integrations._run import UnsupportedVersionError
from remote_train_monitor import SummaryWriter
from tests.fixtures.runs.examples import EXAMPLES, read, run_example
from tests.fixtures.runs.tensorboard import (
    exported_records,
    exported_scalars,
    tensorboard_images,
    tensorboard_scalars,
    tensorboard_texts,
)


@pytest.fixture
def acc() -> SimpleNamespace:
    """Accelerate and the adapter, imported by the tests that use them: Accelerate's import
    takes seconds, which every xdist worker would pay again collecting the whole suite."""
    import accelerate
    from accelerate import Accelerator
    from accelerate.tracking import LOGGER_TYPE_TO_CLASS, TensorBoardTracker

    from remote_train_monitor.accelerate import MonitorTracker, replace_tensorboard

    return SimpleNamespace(
        accelerate=accelerate,
        Accelerator=Accelerator,
        LOGGER_TYPE_TO_CLASS=LOGGER_TYPE_TO_CLASS,
        TensorBoardTracker=TensorBoardTracker,
        MonitorTracker=MonitorTracker,
        replace_tensorboard=replace_tensorboard,
    )


@pytest.mark.integration
def test_two_cpu_processes_write_one_store_with_the_config_as_options(tmp_path):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd = [*torchrun, "--nproc-per-node", "2", str(EXAMPLES / "accelerate_train.py")]
    run_example(cmd, tmp_path, ACCELERATE_USE_CPU="1")
    # replace_tensorboard(): the store is where TensorBoard's events went, project_dir/name.
    history, meta, status = read(tmp_path / "checkpoints/accelerate-demo")
    # 256 samples, batch 16, sharded over 2 processes: 8 steps an epoch, 2 epochs.
    assert history.series(("", "train_loss"))[0] == list(range(16))
    assert len(meta["sessions"]) == 1 and meta["world_size"] == 2
    assert meta["options"] == {"lr": 0.05, "batch_size": 16, "epochs": 2}
    assert status["state"] == "finished"


def _tracking_example(accelerator: Any) -> None:
    """The calls of Accelerate's examples/by_feature/tracking.py (a metric dict per epoch,
    ``step=epoch``) and of diffusers' train_text_to_image.py ``log_validation`` (images
    through ``tracker.writer`` of the tracker named "tensorboard"), on a tiny classifier."""
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.log({"note": "a str is text, as TensorBoard's tracker writes it"})
    accelerator.log({"lr": 0.5})  # no step: TensorBoard's step 0
    for epoch in range(3):
        total_loss = 0.0
        for batch in range(4):
            loss = nn.functional.cross_entropy(model(x[batch::4]), y[batch::4])
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            total_loss += loss.item()
        predictions = model(x).argmax(1)
        tp = ((predictions == 1) & (y == 1)).sum().item()
        f1 = 2 * tp / ((predictions == 1).sum().item() + (y == 1).sum().item())
        accuracy = (predictions == y).float().mean().item()
        accelerator.log(
            {"accuracy": accuracy, "f1": f1, "train_loss": total_loss / 4, "epoch": epoch},
            step=epoch,
        )
        images = [np.full((8, 8, 3), 60 * epoch + i, np.uint8) for i in range(2)]
        for tracker in accelerator.trackers:
            if tracker.name == "tensorboard":
                np_images = np.stack([np.asarray(img) for img in images])
                tracker.writer.add_images("validation", np_images, epoch, dataformats="NHWC")
    accelerator.end_training()


@pytest.mark.integration
def test_tracking_and_diffusers_examples_store_what_tensorboard_wrote(tmp_path, monkeypatch, acc):
    monkeypatch.setitem(acc.LOGGER_TYPE_TO_CLASS, "tensorboard", acc.TensorBoardTracker)
    acc.replace_tensorboard()  # the one line; TensorBoard's own tracker beside ours compares
    tensorboard = acc.TensorBoardTracker("tracking_example", tmp_path / "tb")
    accelerator = acc.Accelerator(
        cpu=True, log_with=["tensorboard", tensorboard], project_dir=str(tmp_path / "ours")
    )
    accelerator.init_trackers("tracking_example", config={"lr": 0.5, "epochs": 3})
    ours = accelerator.get_tracker("tensorboard")
    assert isinstance(ours, acc.MonitorTracker) and ours.logging_dir == str(
        tmp_path / "ours" / "tracking_example"
    )
    assert accelerator.get_tracker("tensorboard", unwrap=True) is ours.writer
    assert isinstance(ours.writer, SummaryWriter)
    _tracking_example(accelerator)

    store, logdir = tmp_path / "ours/tracking_example", tmp_path / "tb/tracking_example"
    assert exported_scalars(store) == tensorboard_scalars(logdir)
    assert set(tensorboard_scalars(logdir)) == {"lr", "accuracy", "f1", "train_loss", "epoch"}
    texts = {
        tag: {s: d["text"] for s, d in steps.items()}
        for tag, steps in exported_records(store, "text").items()
    }
    assert texts == tensorboard_texts(logdir)
    images = {tag: sorted(steps) for tag, steps in exported_records(store, "image").items()}
    assert images == tensorboard_images(logdir) == {"validation": [0, 1, 2]}
    history, meta, status = read(store)
    assert meta["options"] == {"lr": 0.5, "epochs": 3} and status["state"] == "finished"


def test_an_instance_takes_a_name_and_directory_as_tensorboards_tracker(tmp_path, acc):
    tracker = acc.MonitorTracker("run", tmp_path, flush_secs=60)
    accelerator = acc.Accelerator(log_with=[tracker], cpu=True)
    accelerator.init_trackers("ignored: an instance is already made", config={"lr": 0.1})
    accelerator.log({"train_loss": 1.0, "bad": [1, 2]}, step=3)
    accelerator.end_training()
    history, meta, status = read(tmp_path / "run")
    assert history.series(("", "train_loss"))[:2] == ([3], [0.0])
    assert meta["options"] == {"lr": 0.1} and status["state"] == "finished"


def test_an_unsupported_accelerate_is_refused_at_construction(monkeypatch, acc):
    monkeypatch.setattr(acc.accelerate, "__version__", "0.20.3")
    with pytest.raises(UnsupportedVersionError, match=r"supports accelerate >=0\.30,<2"):
        acc.MonitorTracker("run", "checkpoints")
