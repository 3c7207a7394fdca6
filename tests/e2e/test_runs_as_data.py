"""Runs as data: runs written by SummaryWriter, the trainer and ``remote_train_monitor.wandb``
read back by ``Api`` under W&B's names, from disk and from S3, each compared with what was
logged (the store's own reader is the reference)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from remote_train_monitor import Api
from run_core.tags import tag_of
from snapshot_store import read_store
from tests.visualizer.sources.test_s3 import upload

LOSSES = [1.0 / (step + 1) for step in range(20)]


def _summary_writer_run(root: Path) -> Path:
    from remote_train_monitor import SummaryWriter

    with SummaryWriter(root / "tb-run") as writer:
        for step, loss in enumerate(LOSSES):
            writer.add_scalar("train/loss", loss, step)
            if step % 5 == 4:
                writer.add_scalar("val/acc", step / 20, step)
        writer.add_text("notes", "hello", 3)
        writer.add_image("sample", np.zeros((3, 4, 4), np.uint8), 5)
    return root / "tb-run"


def _wandb_run(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import remote_train_monitor.wandb as wandb

    monkeypatch.setenv("WANDB_SILENT", "true")
    config = {"lr": 0.01, "model": {"depth": 2, "widths": [8, 4]}}
    wandb.init(project="sweep", name="wb-run", dir=str(root / "wb"), config=config)
    for loss in LOSSES:
        wandb.log({"loss": loss, "acc": 1 - loss})
    wandb.finish()
    return root / "wb" / "wandb" / "sweep" / "wb-run"


def _trainer_run(root: Path) -> Path:
    import torch
    from torch import nn
    from torch.utils.data import TensorDataset

    import trainer

    torch.manual_seed(0)
    x = torch.rand(32, 4)
    data = TensorDataset(x, x.sum(1, keepdim=True))
    model = nn.Linear(4, 1)
    trainer.fit(model, nn.MSELoss(), torch.optim.Adam(model.parameters()),
                {"train": data, "valid": data}, batch_size=8, num_epochs=2, device="cpu",
                checkpoints_dir=root / "fit", name="fit-run", remote=True)  # fmt: skip
    return root / "fit" / "fit-run"


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> dict[str, Path]:
    """The three runs' run directories, by name."""
    root = tmp_path_factory.mktemp("logged")
    with pytest.MonkeyPatch.context() as monkeypatch:
        runs = {
            "tb-run": _summary_writer_run(root),
            "wb-run": _wandb_run(root, monkeypatch),
            "fit-run": _trainer_run(root),
        }
    return runs


def _store(run_dir: Path) -> Path:
    return run_dir / "pickle" if (run_dir / "pickle").is_dir() else run_dir


def _same_as_logged(run, store: Path) -> None:
    history, reader, update = read_store(store)
    assert not reader.warnings
    options = update.meta.get("options") or {}
    assert {k: run.config[k] for k in options} == options
    frame, rows = run.history(), list(run.scan_history())
    for key in history.keys():
        tag = tag_of(*key)
        steps, _epochs, times, values = history.series(key)
        column = frame.set_index("_step")[tag].dropna()
        assert column.index.tolist() == list(steps) and column.tolist() == list(values), tag
        assert run.summary[tag] == values[-1], tag
        scanned = [(row["_step"], row[tag]) for row in rows if tag in row]
        assert scanned == list(zip(steps, values, strict=True)), tag
        assert run.history(keys=[tag])["_timestamp"].tolist() == list(times), tag
    assert run.state == update.status["state"] == "finished"


def _check(runs: dict, logged: dict[str, Path]) -> None:
    assert set(runs) == set(logged)
    for name, run_dir in logged.items():
        _same_as_logged(runs[name], _store(run_dir))
    tb, wb = runs["tb-run"], runs["wb-run"]
    assert tb.history()["train/loss"].tolist() == LOSSES
    assert tb.history(keys=["val/acc"])["_step"].tolist() == [4, 9, 14, 19]
    assert [t.data for t in tb.texts()["notes"]] == ["hello"]
    assert tb.images()["sample"][0].image().size == (4, 4)
    assert wb.config == {"lr": 0.01, "model": {"depth": 2, "widths": [8, 4]}}
    assert wb.summary["loss"] == LOSSES[-1] and wb.summary["acc"] == 1 - LOSSES[-1]
    assert wb.history()["_step"].tolist() == list(range(20))
    assert (
        runs["fit-run"].summary["val/loss"]
        == runs["fit-run"].history()["val/loss"].dropna().iloc[-1]
    )


def test_runs_written_three_ways_read_back_as_logged(logged, tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    for name, run_dir in logged.items():  # copied: a link out of the root is skipped
        shutil.copytree(run_dir, sweep / name)
    _check({run.name: run for run in Api().runs(str(sweep))}, logged)
    kept = Api().runs(str(sweep), {"config.lr": 0.01})
    assert [run.name for run in kept] == ["wb-run"]


def test_the_same_runs_read_back_from_s3(logged, s3_bucket):
    for name, run_dir in logged.items():
        upload(s3_bucket, _store(run_dir), f"sweep/{name}/pickle/")
    runs = Api().runs(s3_bucket.uri("sweep/"))
    _check({run.name: run for run in runs}, logged)
    assert Api().run(s3_bucket.uri("sweep/wb-run/pickle/")).name == "wb-run"


def test_every_snippet_of_the_runs_as_data_page_runs_in_order(tmp_path, monkeypatch, capsys):
    import re

    from snapshot_store import Recorder
    from tests.fixtures.runs.checkout import ROOT

    for lr in (0.1, 0.01, 0.001):
        with Recorder(tmp_path / "checkpoints" / f"lr-{lr}" / "pickle", options={"lr": lr}) as rec:
            for step in range(50):
                rec.log({"loss": lr + 1 / (step + 1)}, step=step, group="train")
                if step % 10 == 9:
                    rec.log({"loss": 2 * lr + 1 / (step + 1)}, step=step, group="val")
    monkeypatch.chdir(tmp_path)
    page = (ROOT / "docs" / "runs-as-data.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) >= 5
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "runs-as-data.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "lr-0.01 finished 0.01" in out and "50 points; the last:" in out
    assert "3 2 3" in out and (tmp_path / "val-loss.png").stat().st_size > 0
