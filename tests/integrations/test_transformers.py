"""The Hugging Face callback with a real Trainer on a tiny model built from a config (no download)."""

from __future__ import annotations

import runpy
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from integrations._run import UnsupportedVersionError
from remote_train_monitor import SummaryWriter
from snapshot_store import read_store
from tests.fixtures.runs.examples import EXAMPLES, read, run_example
from tests.fixtures.runs.tensorboard import (
    exported_records,
    exported_scalars,
    tensorboard_scalars,
    tensorboard_texts,
)


@pytest.fixture
def hf() -> SimpleNamespace:
    """Transformers and the adapter, imported by the tests that use them: the Trainer's
    import takes seconds, which every xdist worker would pay again collecting the suite."""
    from transformers import Trainer, TrainerControl, TrainerState, TrainingArguments
    from transformers.integrations import TensorBoardCallback

    import integrations.transformers as adapter
    from remote_train_monitor.transformers import MonitorCallback

    return SimpleNamespace(
        Trainer=Trainer,
        TrainerControl=TrainerControl,
        TrainerState=TrainerState,
        TrainingArguments=TrainingArguments,
        TensorBoardCallback=TensorBoardCallback,
        adapter=adapter,
        MonitorCallback=MonitorCallback,
    )


@pytest.mark.integration
def test_the_example_keeps_the_trainers_names_and_args_as_options(tmp_path):
    run_example([sys.executable, str(EXAMPLES / "transformers_trainer.py")], tmp_path)
    history, meta, status = read(tmp_path / "checkpoints/tiny-bert/pickle")
    # 128 samples, batch 16: 8 steps an epoch; logs every 2 steps, evaluation each epoch.
    assert history.series(("eval", "loss"))[0] == [8, 16]
    assert history.series(("eval", "loss"))[1] == [1.0, 2.0]
    assert history.series(("train", "loss"))[0] == [2, 4, 6, 8, 10, 12, 14, 16]
    assert history.series(("train", "learning_rate"))[0] == [2, 4, 6, 8, 10, 12, 14, 16]
    assert history.series(("train", "train_loss"))[0] == [16]  # the run's average, its own series
    # ... and, as W&B's callback keeps them, the end-of-training values are the run's summary
    # and the model's config and parameter count are among its options.
    summary = status["summary"]
    assert summary["train_loss"] == pytest.approx(history.series(("train", "train_loss"))[3][0])
    assert {"train_runtime", "train_samples_per_second", "total_flos"} <= set(summary)
    assert meta["options"]["model/num_parameters"] > 0 and "hidden_size" in meta["options"]
    assert meta["options"]["output_dir"] == "checkpoints/tiny-bert"
    assert meta["options"]["num_train_epochs"] == 2 and len(meta["sessions"]) == 1
    assert status["state"] == "finished"


@pytest.mark.integration
def test_the_trainer_docs_example_stores_what_tensorboards_callback_wrote(
    tmp_path, monkeypatch, hf
):
    """The Trainer docs' example (model, args, datasets, compute_metrics), report_to tensorboard
    kept and one line added: the callback. Tags, steps, values and texts as TensorBoard's."""
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", str(tmp_path / "tb"))
    example = runpy.run_path(str(EXAMPLES / "transformers_trainer.py"))  # its model and data
    args = hf.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        num_train_epochs=2,
        per_device_train_batch_size=16,
        logging_steps=2,
        eval_strategy="epoch",
        save_strategy="no",
        report_to="tensorboard",
        use_cpu=True,
    )

    def compute_metrics(eval_pred):
        logits, labels = eval_pred
        return {"accuracy": float((logits.argmax(-1) == labels).mean())}

    trainer = hf.Trainer(
        model=example["tiny_bert"](),
        args=args,
        train_dataset=example["random_dataset"](64, 0),
        eval_dataset=example["random_dataset"](32, 1),
        compute_metrics=compute_metrics,
        callbacks=[hf.MonitorCallback()],  # the one line
    )
    trainer.train()
    store = tmp_path / "out/pickle"
    expected = tensorboard_scalars(tmp_path / "tb")
    assert {"train/loss", "train/learning_rate", "eval/loss", "eval/accuracy"} <= set(expected)
    assert exported_scalars(store) == expected
    texts = exported_records(store, "text")
    assert {tag: {s: d["text"] for s, d in steps.items()} for tag, steps in texts.items()} == (
        tensorboard_texts(tmp_path / "tb")
    )
    assert set(texts) == {"args", "model_config"}


def _state(hf: SimpleNamespace, step: int, zero: bool = True) -> Any:
    return hf.TrainerState(global_step=step, epoch=step / 4, is_world_process_zero=zero)


def test_only_world_process_zero_writes_and_saves_go_through_the_hook(tmp_path, monkeypatch, hf):
    target = tmp_path / "remote"
    target.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(target))
    args = hf.TrainingArguments(output_dir=str(tmp_path / "run"), report_to=[], use_cpu=True)
    elsewhere = hf.MonitorCallback(remote_transfer_cmd="transfer_plugins.local.copy_to")
    elsewhere.on_train_begin(args, _state(hf, 0, zero=False), hf.TrainerControl())
    elsewhere.on_log(args, _state(hf, 1, zero=False), hf.TrainerControl(), logs={"loss": 1.0})
    assert elsewhere.run is None and not (tmp_path / "run").exists()

    callback = hf.MonitorCallback(remote_transfer_cmd="transfer_plugins.local.copy_to")
    callback.on_train_begin(args, _state(hf, 0), hf.TrainerControl())
    callback.on_log(
        args, _state(hf, 2), hf.TrainerControl(), logs={"loss": 0.5, "note": "text", "epoch": 0.5}
    )
    checkpoint = tmp_path / "run/checkpoint-2/model.safetensors"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"weights")
    callback.on_save(args, _state(hf, 2), hf.TrainerControl())
    callback.on_train_end(args, _state(hf, 2), hf.TrainerControl())
    assert (target / "run/checkpoint-2/model.safetensors").read_bytes() == b"weights"
    history, meta, status = read(target / "run/pickle")
    assert history.series(("train", "loss"))[:2] == ([2], [0.5])
    assert history.series(("train", "epoch"))[3] == [0.5]
    texts = {tag for kind, tag, *_ in read_store(target / "run/pickle")[2].extras if kind == "text"}
    assert texts == {"args", "train/note"}
    assert meta["options"]["output_dir"] == str(tmp_path / "run")


def test_tensorboard_callback_accepts_our_writer(tmp_path, hf):
    writer = SummaryWriter(tmp_path / "tb")
    callback = hf.TensorBoardCallback(tb_writer=writer)
    args = hf.TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    callback.on_train_begin(args, _state(hf, 0), hf.TrainerControl())
    callback.on_log(args, _state(hf, 1), hf.TrainerControl(), logs={"loss": 0.5, "eval_loss": 0.7})
    callback.on_train_end(args, _state(hf, 1), hf.TrainerControl())
    history, _, _ = read(tmp_path / "tb")
    assert history.series(("train", "loss"))[3] == [0.5]
    assert history.series(("eval", "loss"))[3] == [0.7]
    extras = {
        (kind, tag): data for kind, tag, _s, _w, data in read_store(tmp_path / "tb")[2].extras
    }
    assert '"output_dir"' in extras[("text", "args")]["text"]  # TensorBoardCallback's add_text


def test_an_unsupported_transformers_is_refused_at_construction(monkeypatch, hf):
    # The module the adapter checks (importing transformers.Trainer can leave another object
    # under that name in a test module).
    monkeypatch.setattr(hf.adapter.transformers, "__version__", "3.5.1")
    with pytest.raises(UnsupportedVersionError, match=r"supports transformers >=4\.40,<6"):
        hf.MonitorCallback()
