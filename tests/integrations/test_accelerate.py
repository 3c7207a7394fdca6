"""The Accelerate tracker with real Accelerate: 2 CPU processes under torchrun, one writer."""

from __future__ import annotations

import logging
import sys

import accelerate
import pytest
from accelerate import Accelerator

from integrations._run import UnsupportedVersionError
from integrations.accelerate import MonitorTracker
from tests.integrations.helpers import EXAMPLES, read, run_example
from trainer import SummaryWriter


@pytest.mark.integration
def test_two_cpu_processes_write_one_store_with_the_config_as_options(tmp_path):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd = [*torchrun, "--nproc-per-node", "2", str(EXAMPLES / "accelerate_train.py")]
    run_example(cmd, tmp_path, ACCELERATE_USE_CPU="1")
    history, meta, status = read(tmp_path / "checkpoints/accelerate-demo/pickle")
    # 256 samples, batch 16, sharded over 2 processes: 8 steps an epoch, 2 epochs.
    assert history.series(("train", "loss"))[0] == list(range(16))
    assert len(meta["sessions"]) == 1 and meta["world_size"] == 2
    assert meta["options"] == {"lr": 0.05, "batch_size": 16, "epochs": 2}
    assert status["state"] == "finished"


def test_log_without_step_strings_and_end_training_in_process(tmp_path, caplog):
    tracker = MonitorTracker(tmp_path / "run")
    accelerator = Accelerator(log_with=[tracker], cpu=True)
    accelerator.init_trackers("run", config={"lr": 0.1})
    assert isinstance(accelerator.get_tracker("remote_train_monitor", unwrap=True), SummaryWriter)
    with caplog.at_level(logging.WARNING):
        accelerator.log({"train_loss": 1.0, "note": "text"})
        accelerator.log({"train_loss": 0.5, "valid/acc": 0.75})
        accelerator.log({"train_loss": 0.25}, step=10)
        accelerator.end_training()
    history, meta, status = read(tmp_path / "run/pickle")
    assert history.series(("train", "loss"))[:2] == ([0, 1, 10], [0.0, 0.0, 0.0])
    assert history.series(("validation", "acc"))[3] == [0.75]
    assert sum("train/note" in r.getMessage() for r in caplog.records) == 1
    assert meta["options"] == {"lr": 0.1} and status["state"] == "finished"


def test_an_unsupported_accelerate_is_refused_at_construction(monkeypatch):
    monkeypatch.setattr(accelerate, "__version__", "0.20.3")
    with pytest.raises(UnsupportedVersionError, match=r"supports accelerate >=0\.30,<2"):
        MonitorTracker("checkpoints/run")
