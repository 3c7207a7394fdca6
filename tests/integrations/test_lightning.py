"""The Lightning logger with real Lightning: DDP on CPU, checkpoints through the transfer hook."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from integrations._run import UnsupportedVersionError
from tests.fixtures.runs.examples import EXAMPLES, read, run_example
from tests.fixtures.runs.tensorboard import exported_records, exported_scalars, tensorboard_scalars
from trainer import SummaryWriter
from visualizer.sources.runs import LocalRuns


@pytest.fixture
def lit():
    """Lightning, the adapter and the modules trained here (imported by the tests that use
    them: :mod:`tests.integrations.lightning_modules` says why)."""
    from tests.integrations import lightning_modules

    return lightning_modules


@pytest.mark.integration
def test_ddp_on_two_cpu_processes_has_one_writer_every_step_and_the_hyperparameters(tmp_path):
    run_example([sys.executable, str(EXAMPLES / "lightning_ddp.py")], tmp_path)
    history, meta, status = read(tmp_path / "checkpoints/lightning_logs/version_0/pickle")
    # 256 samples, batch 16, 2 processes: 8 optimizer steps an epoch, logged every step.
    assert history.series(("", "train_loss"))[0] == list(range(16))
    assert history.series(("", "val_loss"))[0] == [7, 15]
    assert history.series(("", "train_loss"))[1][-1] == 1.0  # Lightning's epoch entry
    assert history.series(("", "epoch"))[3][-1] == 1.0  # also a series, as TensorBoard's
    assert len(meta["sessions"]) == 1 and meta["world_size"] == 2
    assert meta["options"] == {"lr": 0.05, "hidden": 16}
    assert status["state"] == "finished"


@pytest.mark.integration
def test_checkpoints_go_through_the_transfer_hook_and_experiment_is_our_writer(
    tmp_path, monkeypatch, lit
):
    target = tmp_path / "remote"
    target.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(target))
    logger = lit.MonitorLogger(
        tmp_path / "ckpts", name="exp", remote_transfer_cmd="transfer_plugins.local.copy_to"
    )
    lit.fit(lit.Tiny(), logger, epochs=2)
    assert logger.version == 0 and logger.log_dir == str(tmp_path / "ckpts/exp/version_0")
    checkpoints = sorted((tmp_path / "ckpts/exp/version_0/checkpoints").glob("*.ckpt"))
    assert [p.name for p in checkpoints] == ["epoch=1-step=8.ckpt"]
    sent = target / "exp/version_0/checkpoints/epoch=1-step=8.ckpt"
    assert sent.read_bytes() == checkpoints[0].read_bytes()
    history, meta, status = read(target / "exp/version_0/pickle")
    assert history.series(("", "train_loss"))[0] == list(range(8))
    assert meta["options"] == {"lr": 0.1} and status["state"] == "finished"

    # A second logger in the same place takes the next version; experiment is our writer.
    again = lit.MonitorLogger(tmp_path / "ckpts", name="exp")
    writer = again.experiment
    assert isinstance(writer, SummaryWriter) and again.version == 1
    writer.add_scalar("val/acc", 0.5, 3)
    again.log_metrics({"train_loss": 1.0, "epoch": 0}, step=3)
    again.finalize("success")
    history, meta, _ = read(tmp_path / "ckpts/exp/version_1/pickle")
    assert set(history.keys()) == {("val", "acc"), ("", "train_loss"), ("", "epoch")}
    assert len(meta["sessions"]) == 1


def test_two_versions_in_one_folder_are_named_with_their_experiment(tmp_path, lit):
    # Not version_0 and version_1: the viewer's table and envs show the experiment too.
    for _ in range(2):
        logger = lit.MonitorLogger(tmp_path, name="exp")
        logger.log_metrics({"train_loss": 1.0}, step=0)
        logger.finalize("success")
    runs = LocalRuns(tmp_path / "exp").discover()  # followed as the docs say: the experiment
    assert sorted(spec.name for spec in runs) == ["exp/version_0", "exp/version_1"]
    assert read(tmp_path / "exp/version_1/pickle")[1]["name"] == "exp/version_1"


def test_an_unsupported_lightning_is_refused_at_construction(monkeypatch, lit):
    monkeypatch.setattr(lit.lightning, "__version__", "1.9.5")
    with pytest.raises(UnsupportedVersionError, match=r"supports lightning >=2\.1,<3"):
        lit.MonitorLogger("checkpoints")


@pytest.mark.integration
def test_a_failing_fit_marks_the_run_failed_and_keeps_what_was_logged(tmp_path, lit):
    logger = lit.MonitorLogger(tmp_path, name="exp")
    with pytest.raises(RuntimeError, match="boom"):
        lit.fit(lit.Failing(), logger, epochs=1)
    history, meta, status = read(tmp_path / "exp/version_0/pickle")
    assert history.series(("", "train_loss"))[0] == [0, 1]
    assert status["state"] == "failed" and meta["options"] == {"lr": 0.1}


@pytest.mark.integration
def test_the_templates_store_tensorboards_tags_steps_and_values(tmp_path, lit):
    torch.manual_seed(0)
    data = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=8)
    tensorboard = lit.TensorBoardLogger(tmp_path / "tb")
    ours = lit.MonitorLogger(
        tmp_path / "ours"
    )  # the one-line change: logger=lit.MonitorLogger(...)
    trainer = lit.Trainer(
        accelerator="cpu",
        max_epochs=2,
        log_every_n_steps=1,
        logger=[tensorboard, ours],
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(lit.AutoEncoder(), data, data)
    store = tmp_path / "ours/lightning_logs/version_0/pickle"
    expected = tensorboard_scalars(Path(tensorboard.log_dir))
    assert {"loss", "train_loss", "val_loss_step", "val_loss_epoch", "epoch", "hp_metric"} <= set(
        expected
    )
    assert exported_scalars(store) == expected
    images = exported_records(store, "image")
    assert {tag: sorted(steps) for tag, steps in images.items()} == {
        "validation/generated_images": [0, 1]
    }


def _tensorboard_hparams(logdir: Path) -> tuple[dict, list[str]]:
    """The hparams plugin's session (name -> value) and metric tags TensorBoard wrote."""
    from google.protobuf.json_format import MessageToDict
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.plugins.hparams import plugin_data_pb2

    [events] = logdir.glob("events.out.tfevents.*")
    session: dict = {}
    tags: list[str] = []
    for event in EventFileLoader(str(events)).Load():
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name != "hparams":
                continue
            data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
            if data.HasField("session_start_info"):
                session = MessageToDict(data.session_start_info)["hparams"]
            if data.HasField("experiment"):
                tags = [info.name.tag for info in data.experiment.metric_infos]
    return session, tags


@pytest.mark.integration
def test_log_hyperparams_with_metrics_stores_tensorboards_hparams_records_and_yaml(tmp_path, lit):
    params = {"lr": 0.1, "layers": 3, "model": {"depth": 2, "act": "relu"}, "flag": True}
    params |= {"widths": [8, 16], "none": None}
    metrics = {"hp/metric_1": 0, "hp/metric_2": 0}
    loggers = [
        lit.TensorBoardLogger(tmp_path / "tb", default_hp_metric=False),
        lit.MonitorLogger(tmp_path / "ours", default_hp_metric=False),
    ]
    for logger in loggers:  # Lightning's logging docs: the hparams, then the metrics they name
        logger.log_hyperparams({"first": 1})  # no metrics, no hp_metric: no session yet
        logger.log_hyperparams(params, metrics)
        logger.log_metrics({"hp/metric_1": 0.25, "hp/metric_2": 0.5}, step=5)
        logger.finalize("success")
    tensorboard, ours = (Path(logger.log_dir) for logger in loggers)
    session, tags = _tensorboard_hparams(tensorboard)
    assert session["model/depth"] == 2.0 and session["widths"] == "[8, 16]"  # flattened, text
    assert tags == list(metrics)
    [[row]] = [rows.values() for rows in exported_records(ours / "pickle", "hparams").values()]
    assert row["hparams"] == session and list(row["metrics"]) == tags
    assert exported_scalars(ours / "pickle") == tensorboard_scalars(tensorboard)
    assert (ours / "hparams.yaml").read_text() == (tensorboard / "hparams.yaml").read_text()
