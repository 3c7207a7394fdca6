"""The Hugging Face callback with a real Trainer on a tiny model built from a config (no download)."""

from __future__ import annotations

import sys

import pytest
import transformers
from transformers import TrainerControl, TrainerState, TrainingArguments
from transformers.integrations import TensorBoardCallback

from integrations._run import UnsupportedVersionError
from integrations.transformers import MonitorCallback
from snapshot_store import read_store
from tests.integrations.helpers import EXAMPLES, read, run_example
from trainer import SummaryWriter


@pytest.mark.integration
def test_the_example_records_eval_loss_in_validation_and_args_as_options(tmp_path):
    run_example([sys.executable, str(EXAMPLES / "transformers_trainer.py")], tmp_path)
    history, meta, status = read(tmp_path / "checkpoints/tiny-bert/pickle")
    # 128 samples, batch 16: 8 steps an epoch; logs every 2 steps, evaluation each epoch.
    assert history.series(("validation", "loss"))[0] == [8, 16]
    assert history.series(("validation", "loss"))[1] == [1.0, 2.0]
    assert history.series(("train", "loss"))[0] == [2, 4, 6, 8, 10, 12, 14, 16]
    assert history.series(("lr", "learning_rate"))[0] == [2, 4, 6, 8, 10, 12, 14, 16]
    assert history.series(("train", "train_loss"))[0] == [16]  # the run's average, its own series
    assert meta["options"]["output_dir"] == "checkpoints/tiny-bert"
    assert meta["options"]["num_train_epochs"] == 2 and len(meta["sessions"]) == 1
    assert status["state"] == "finished"


def _state(step: int, zero: bool = True) -> TrainerState:
    return TrainerState(global_step=step, epoch=step / 4, is_world_process_zero=zero)


def test_only_world_process_zero_writes_and_saves_go_through_the_hook(tmp_path, monkeypatch):
    target = tmp_path / "remote"
    target.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(target))
    args = TrainingArguments(output_dir=str(tmp_path / "run"), report_to=[], use_cpu=True)
    elsewhere = MonitorCallback(remote_transfer_cmd="transfer_plugins.local.copy_to")
    elsewhere.on_train_begin(args, _state(0, zero=False), TrainerControl())
    elsewhere.on_log(args, _state(1, zero=False), TrainerControl(), logs={"loss": 1.0})
    assert elsewhere.run is None and not (tmp_path / "run").exists()

    callback = MonitorCallback(remote_transfer_cmd="transfer_plugins.local.copy_to")
    callback.on_train_begin(args, _state(0), TrainerControl())
    callback.on_log(
        args, _state(2), TrainerControl(), logs={"loss": 0.5, "note": "text", "epoch": 0.5}
    )
    checkpoint = tmp_path / "run/checkpoint-2/model.safetensors"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"weights")
    callback.on_save(args, _state(2), TrainerControl())
    callback.on_train_end(args, _state(2), TrainerControl())
    assert (target / "run/checkpoint-2/model.safetensors").read_bytes() == b"weights"
    history, meta, status = read(target / "run/pickle")
    assert history.series(("train", "loss"))[:2] == ([2], [0.5])
    assert ("train", "note") not in history.keys()
    assert meta["options"]["output_dir"] == str(tmp_path / "run")


def test_tensorboard_callback_accepts_our_writer(tmp_path):
    writer = SummaryWriter(tmp_path / "tb")
    callback = TensorBoardCallback(tb_writer=writer)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    callback.on_train_begin(args, _state(0), TrainerControl())
    callback.on_log(args, _state(1), TrainerControl(), logs={"loss": 0.5, "eval_loss": 0.7})
    callback.on_train_end(args, _state(1), TrainerControl())
    history, _, _ = read(tmp_path / "tb")
    assert history.series(("train", "loss"))[3] == [0.5]
    assert history.series(("eval", "loss"))[3] == [0.7]
    extras = {
        (kind, tag): data for kind, tag, _s, _w, data in read_store(tmp_path / "tb")[2].extras
    }
    assert '"output_dir"' in extras[("text", "args")]["text"]  # TensorBoardCallback's add_text


def test_an_unsupported_transformers_is_refused_at_construction(monkeypatch):
    monkeypatch.setattr(transformers, "__version__", "3.5.1")
    with pytest.raises(UnsupportedVersionError, match=r"supports transformers >=4\.40,<6"):
        MonitorCallback()
