"""What the framework adapters share: name mapping, version checks, the run's writer."""

from __future__ import annotations

import logging

import pytest

from integrations._run import MonitorRun, UnsupportedVersionError, require_version, split_name
from snapshot_store import StoreError
from tests.integrations.helpers import read


@pytest.mark.parametrize(
    ("key", "where"),
    [
        ("train_loss", ("train", "loss")),
        ("train/loss", ("train", "loss")),
        ("val_loss", ("validation", "loss")),
        ("valid_acc", ("validation", "acc")),
        ("eval_loss", ("validation", "loss")),
        ("test_acc", ("test", "acc")),
        ("lr-Adam", ("lr", "lr-Adam")),
        ("lr-Adam/pg1", ("lr", "lr-Adam/pg1")),
        ("learning_rate", ("lr", "learning_rate")),
        ("metrics/f1", ("metrics", "f1")),
        ("loss", ("train", "loss")),
        ("grad_norm", ("train", "grad_norm")),
        ("train_", ("train", "train_")),
    ],
)
def test_metric_names_map_to_groups(key, where):
    assert split_name(key) == where


def test_a_version_outside_the_range_is_refused_naming_the_range():
    require_version("X", "lightning", "2.6.6", ">=2.1,<3")
    require_version("X", "lightning", "2.7.0.dev0", ">=2.1,<3")  # a nightly inside the range
    with pytest.raises(
        UnsupportedVersionError, match=r"X supports lightning >=2.1,<3; lightning 1\.9\.5"
    ):
        require_version("X", "lightning", "1.9.5", ">=2.1,<3")


def test_bad_values_are_skipped_with_one_warning_and_the_run_goes_on(tmp_path, caplog):
    store = tmp_path / "run" / "pickle"
    run = MonitorRun(store, tmp_path, options={"lr": 0.1, "api_token": "s3cret"})
    with caplog.at_level(logging.WARNING):
        for step in range(3):
            run.log({"train_loss": 1.0 / (step + 1), "val_note": "abc"}, step)
        run.log({"train_loss": float("nan")}, 3)
        run.log({"train_loss": float("inf")}, 4)
        run.close()
    history, meta, status = read(store)
    assert history.series(("train", "loss"))[0] == [0, 1, 2, 3, 4]
    assert ("validation", "note") not in history.keys()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("validation/note" in w and "not a number" in w for w in warnings) == 1
    assert sum("train_loss: non-finite" in w for w in warnings) == 1
    assert meta["options"] == {"lr": 0.1, "api_token": "***"}
    assert status["state"] == "finished"


def test_steps_default_to_the_next_and_dicts_get_a_window(tmp_path):
    store = tmp_path / "run" / "pickle"
    run = MonitorRun(store, tmp_path)
    run.log({"loss": 1.0}, None)
    run.log({"loss": 0.5, "losses": {"a": 1.0, "b": 2.0}}, None)
    run.log({"loss": 0.25}, 10)
    run.log({"loss": 0.125}, None)
    run.set_options({"hidden": 16})
    run.close()
    history, meta, _ = read(store)
    assert history.series(("train", "loss"))[0] == [0, 1, 10, 11]
    assert history.series(("losses", "b"))[0] == [1]
    assert meta["options"] == {"hidden": 16} and len(meta["sessions"]) == 1


def test_store_files_and_sent_files_go_through_the_transfer_hook(tmp_path, monkeypatch):
    target = tmp_path / "remote"
    target.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(target))
    root = tmp_path / "checkpoints"
    checkpoint = root / "run" / "model.ckpt"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(b"weights")
    run = MonitorRun(root / "run" / "pickle", root, transfer_spec="transfer_plugins.local.copy_to")
    run.log({"loss": 1.0}, 0)
    run.send([checkpoint])
    run.set_options({"lr": 0.5})
    run.close()
    assert (target / "run" / "model.ckpt").read_bytes() == b"weights"
    history, meta, status = read(target / "run" / "pickle")
    assert history.series(("train", "loss"))[3] == [1.0]
    assert meta["options"] == {"lr": 0.5} and status["state"] == "finished"


def test_an_unwritable_store_fails_at_open_naming_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=str(blocker)):
        MonitorRun(blocker / "pickle", tmp_path)
